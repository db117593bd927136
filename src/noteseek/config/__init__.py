"""Settings: what noteseek reads from defaults, files, the environment and flags.

* :mod:`~noteseek.config.base`: the error type and the strict section base
* :mod:`~noteseek.config.indexing`: roots, index, chunking, analysis
* :mod:`~noteseek.config.search`: ranking (``[search]`` and ``[search.weights]``)
* :mod:`~noteseek.config.models`: embedding, vectors, rerank
* :mod:`~noteseek.config.serving`: watch, serve
* :mod:`~noteseek.config.memory`: memory, flush
* :mod:`~noteseek.config.git`: git
* :mod:`~noteseek.config.milvus`: milvus (the scale-out store)
* :mod:`~noteseek.config.settings`: the whole tree (:class:`Settings`)
* :mod:`~noteseek.config.loading`: the layers and :func:`load_settings`
* :mod:`~noteseek.config.template`: the ``noteseek init`` template, generated from the fields

Import from here; the modules are how the package is organised, not its interface.
"""

from noteseek.config.base import ConfigError
from noteseek.config.git import GitSettings
from noteseek.config.indexing import AnalysisSettings, ChunkingSettings, IndexSettings, RootConfig
from noteseek.config.loading import (
    LAYERS,
    Layer,
    LoadedConfig,
    ad_hoc_root,
    default_index_dir,
    load_settings,
    memory_folder,
    user_config_file,
)
from noteseek.config.memory import FlushSettings, HookSettings, MemorySettings
from noteseek.config.milvus import MilvusSettings
from noteseek.config.models import EmbeddingSettings, RerankSettings, VectorSettings
from noteseek.config.search import ColumnWeights, SearchSettings
from noteseek.config.serving import ServeSettings, WatchSettings
from noteseek.config.settings import ENV_PREFIX, Settings
from noteseek.config.template import init_template
from noteseek.places import APP_NAME, PROJECT_FILE, data_dir, find_project_file

__all__ = [
    "APP_NAME",
    "ENV_PREFIX",
    "LAYERS",
    "PROJECT_FILE",
    "AnalysisSettings",
    "ChunkingSettings",
    "ColumnWeights",
    "ConfigError",
    "EmbeddingSettings",
    "FlushSettings",
    "GitSettings",
    "HookSettings",
    "IndexSettings",
    "Layer",
    "LoadedConfig",
    "MemorySettings",
    "MilvusSettings",
    "RerankSettings",
    "RootConfig",
    "SearchSettings",
    "ServeSettings",
    "Settings",
    "VectorSettings",
    "WatchSettings",
    "ad_hoc_root",
    "data_dir",
    "default_index_dir",
    "find_project_file",
    "init_template",
    "load_settings",
    "memory_folder",
    "user_config_file",
]
