"""``--fallback`` of ``backstay run``: the candidates a run may move to, checked once.

Each item is ``ADAPTER:MODEL`` (``openai-api:gpt-4.1``), or a YAML mapping with the keys
of a suite's ``fallbacks`` entry (``{adapter: openai-api, model: gpt-4.1, api_key_env:
OPENAI_API_KEY, context_window: 1000000, base_url: ...}``). There is no ``@WINDOW``
short form: model ids may hold an ``@`` themselves (``claude-sonnet-4@20250514`` on
Vertex). The value of each ``api_key_env`` is read from the environment here, so that a
variable that is not set stops the run before anything starts.

``chain_envs`` gives each adapter of the chain its whole environment: the variables named
explicitly over the standard variables of that adapter's own provider
(``backstay.adapters.provider_env``), so an ``openai-api`` fallback of an
``anthropic-api`` run takes ``OPENAI_API_KEY``, not ``ANTHROPIC_API_KEY``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from backstay.adapters.provider_env import agent_env
from backstay.adapters.registry import adapter_class
from backstay.config._document import Document
from backstay.config._overrides import UNSET, yaml_value
from backstay.config._source import Source, SourceKind
from backstay.errors import ConfigError
from backstay.fallback.candidate import Candidate

__all__ = ["chain_envs", "harness_fallbacks"]

_PATH = ("fallbacks",)
_SOURCE = Source(SourceKind.CLI, "--fallback")


def _candidate(doc: Document, text: str) -> Candidate | None:
    if not text.lstrip().startswith("{"):
        return Candidate.parse(text)
    value = yaml_value(doc, text, _SOURCE)
    return None if value is UNSET else Candidate.from_dict(value, where="--fallback")


def harness_fallbacks(
    doc: Document, items: Iterable[str], *, primary: Candidate, environ: Mapping[str, str]
) -> tuple[tuple[Candidate, ...], dict[str, str]]:
    """The candidates ``items`` name (after ``primary``, the run's own adapter and model)
    and the credential variables they add to the agent's environment; each problem is
    added to ``doc`` under ``fallbacks``."""
    chosen: list[Candidate] = []
    env: dict[str, str] = {}
    names = {primary.name}
    for text in items:
        try:
            candidate = _candidate(doc, text)
        except ConfigError as err:
            doc.problem(_PATH, f"{err.reason} (in {text!r})")
            continue
        if candidate is None:
            continue
        if candidate.adapter is None:
            doc.problem(_PATH, f"must name an adapter (in {text!r})")
            continue
        try:
            adapter_class(candidate.adapter)
        except ConfigError as err:
            doc.problem(_PATH, err.reason)
            continue
        if candidate.name in names:
            doc.problem(_PATH, f"{candidate.name} is already in the chain")
            continue
        names.add(candidate.name)
        variable = candidate.api_key_env
        if variable is not None:
            value = environ.get(variable)
            if not value:
                doc.problem(_PATH, f"{variable} is not set (the key of fallback {candidate.name})")
                continue
            env[variable] = value
        chosen.append(candidate)
    return tuple(chosen), env


def chain_envs(
    declared: object,
    chain: Iterable[Candidate],
    explicit: Mapping[str, str],
    *,
    environ: Mapping[str, str],
    inherit: bool,
) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """The whole environment of the run's own adapter (``declared``: its class) and of
    each other adapter of ``chain``, by name: ``explicit`` over the standard variables of
    that adapter's provider taken from ``environ`` (none unless ``inherit``)."""
    own = agent_env(declared, explicit, environ=environ, inherit=inherit)
    own_name = getattr(declared, "name", None)
    others = {
        name: agent_env(adapter_class(name), explicit, environ=environ, inherit=inherit)
        for name in sorted({str(c.adapter) for c in chain} - {own_name})
    }
    return own, others
