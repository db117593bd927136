"""Settings for git history: which repositories are indexed and how much of a diff is kept."""

from __future__ import annotations

from pydantic import Field

from noteseek.config.base import Section


class GitSettings(Section):
    """``[git]``: commits of git repositories, searched apart from documents."""

    discover: bool = Field(
        default=False,
        description="Also index the history of the git repositories that hold or sit under "
        "the other roots' folders, each as a root of kind git named ROOT.git (ROOT.git.SUB "
        'for a repository in a subfolder); [roots.NAME] kind = "git" adds one explicitly.',
    )
    document_weight: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="The whole commit's share of a commit section's keyword score "
        "(search.document_weight for documents): 0 ranks a commit by its best-matching "
        "section (measured in docs/evaluation.md; it also halves keyword latency).",
    )
    embed_diffs: bool = Field(
        default=False,
        description="Embed each changed file's hunks as well as the commit's message, its "
        "file list and added pages' names (false: about one text a commit to embed instead "
        "of seven; the keyword lane still reads the hunks; measured in docs/evaluation.md). "
        "Applies to commits indexed from then on; `noteseek rebuild` applies it to all.",
    )
    semantic_weight: float | None = Field(
        default=0.1,
        ge=0,
        description="Fusion weight of the semantic lane in commit search (documents: "
        "search.semantic_weight, 1.5): 0.1 makes it a tie-breaker, as measured on two "
        "known-item sets (docs/evaluation.md); unset: search.semantic_weight.",
    )
    all_terms_bonus: float | None = Field(
        default=1.0,
        ge=0,
        description="search.all_terms_bonus in commit search: 1 puts commits holding every "
        "word of a short query first (added-page R@1 0.785 against 0.775 with the documents' "
        "0.1; docs/evaluation.md); unset: search.all_terms_bonus.",
    )
    max_file_lines: int = Field(
        default=120,
        ge=10,
        le=100_000,
        description="Diff lines kept per changed file of a commit; the rest of that file's "
        "hunks is left out (the commit says so).",
    )
    max_diff_lines: int = Field(
        default=400,
        ge=10,
        le=1_000_000,
        description="Diff lines kept per commit over all its files; files past the bound are "
        "listed by name with their line counts, without hunks.",
    )
    max_files: int = Field(
        default=50,
        ge=1,
        le=100_000,
        description="Changed files of a commit shown with hunks; a commit changing more lists "
        "the first ones and says how many more there are.",
    )
