"""One table of operations that every door uses (see ``table.py``).

Light to import: the engine loads on the first call, so an MCP server answers its handshake
and lists its tools before any index is opened.
"""

from noteseek.lazy import lazy_exports
from noteseek.operations.context import AGENT_LIMITS, NO_LIMITS, Context, Limits
from noteseek.operations.errors import ERROR_KINDS, ERROR_MEANING, ErrorKind, OperationError
from noteseek.operations.params import Params, describe_errors, input_schema, parse_arguments
from noteseek.operations.runtime import Runtime, execute, parse
from noteseek.operations.table import (
    HttpRoute,
    Operation,
    every_operation,
    http_operations,
    mcp_operations,
    operation,
)

__all__ = [
    "AGENT_LIMITS",
    "ERROR_KINDS",
    "ERROR_MEANING",
    "NO_LIMITS",
    "OPERATIONS",
    "Context",
    "ErrorKind",
    "HttpRoute",
    "Limits",
    "Operation",
    "OperationError",
    "Params",
    "Runtime",
    "describe_errors",
    "every_operation",
    "execute",
    "http_operations",
    "input_schema",
    "mcp_operations",
    "operation",
    "parse",
    "parse_arguments",
]

# ``OPERATIONS``: the whole table (``table.every_operation``), built on first use.
__getattr__ = lazy_exports(__name__, {"OPERATIONS": "noteseek.operations.table"}, globals())
