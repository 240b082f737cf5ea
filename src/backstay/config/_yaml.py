"""YAML text → plain data, with the line of every key (from the parser's node marks)."""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from backstay.config._document import Document
from backstay.config._paths import Path
from backstay.config._source import Source, SourceKind

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Aliases can multiply a small file into a huge tree ("billion laughs"): stop early.
MAX_NODES = 200_000
_MERGE_TAG = "tag:yaml.org,2002:merge"
# Plain mappings and lists only: other tags on collections (!!set, !!omap, !!python/…) are
# refused rather than silently read as something else.
_COLLECTION_TAGS = frozenset({"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"})


class _TooLarge(Exception):
    pass


class _Reader:
    def __init__(self, loader: yaml.SafeLoader, doc: Document) -> None:
        self.loader = loader
        self.doc = doc
        self.count = 0
        self.active: set[int] = set()

    def at(self, node: Node) -> Source:
        return Source(SourceKind.FILE, f"{self.doc.name}:{node.start_mark.line + 1}")

    def build(self, node: Node, path: Path) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            raise _TooLarge
        if id(node) in self.active:
            self.doc.problem(path, "an alias refers to itself", source=self.at(node))
            return None
        if isinstance(node, ScalarNode):
            return self.loader.construct_object(node, deep=True)
        if node.tag not in _COLLECTION_TAGS:
            self.doc.problem(path, f"unsupported YAML tag {node.tag}", source=self.at(node))
            return None
        self.active.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                out = []
                for index, item in enumerate(node.value):
                    item_path = (*path, f"[{index}]")
                    self.doc.sources[item_path] = self.at(item)
                    out.append(self.build(item, item_path))
                return out
            if isinstance(node, MappingNode):
                return self.mapping(node, path)
        finally:
            self.active.discard(id(node))
        return self.loader.construct_object(node, deep=True)  # pragma: no cover

    def mapping(self, node: MappingNode, path: Path) -> dict[str, Any]:
        first: dict[object, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG or not isinstance(key_node, ScalarNode):
                continue
            key = self.loader.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if isinstance(key, str) and key in first:
                self.doc.problem(
                    (*path, key),
                    f"is given twice (first on line {first[key]})",
                    source=self.at(key_node),
                )
            first.setdefault(key, line)
        self.loader.flatten_mapping(node)  # merge keys (<<) first, explicit keys win
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self.loader.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                self.doc.problem(path, f"keys must be text, got {key!r}", source=self.at(key_node))
                continue
            key_path = (*path, key)
            self.doc.sources[key_path] = self.at(key_node)
            out[key] = self.build(value_node, key_path)
        return out


def read_yaml(text: str, doc: Document) -> Any:
    """The data of ``text``; problems (syntax, duplicate keys …) go to ``doc``. ``None``
    for an empty document or when the text cannot be read at all."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        return _Reader(loader, doc).build(node, ())
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        reason = err.problem or err.context or "invalid YAML"
        if mark is None:
            doc.problem((), f"invalid YAML: {reason}")
        else:
            doc.problem(
                (),
                f"invalid YAML: {reason} (column {mark.column + 1})",
                source=Source(SourceKind.FILE, f"{doc.name}:{mark.line + 1}"),
            )
    except yaml.YAMLError as err:
        doc.problem((), f"invalid YAML: {err}")
    except _TooLarge:
        doc.problem((), f"too large: more than {MAX_NODES} values once aliases are expanded")
    except RecursionError:
        doc.problem((), "nested too deeply")
    finally:
        loader.dispose()
    return None
