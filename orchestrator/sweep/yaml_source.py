"""Reading a sweep (or study) file's YAML strictly: a key written twice in one mapping is an
error naming the key and both lines, where PyYAML's `safe_load` keeps the last one silently
(`resources:` at the top of a file and again at its bottom: the first was ignored).

`load_yaml(text)` is `yaml.safe_load` with that check; `DuplicateKeyError` is a
`yaml.YAMLError`, so a caller that reports YAML errors reports it too. A merge key (`<<: *base`)
may still be overridden by the mapping's own keys, as YAML intends.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node


class DuplicateKeyError(ConstructorError):
    """A mapping gives one key twice; the message names the key and both (1-based) lines."""


class UniqueKeyLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` that refuses a key written twice in one mapping."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<`: its keys are meant to be overridden
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: SafeLoader's own error says so below
                break
            if first is not None:
                raise DuplicateKeyError(
                    None,
                    None,
                    f"key {key!r} is written twice in one mapping "
                    f"(line {first.start_mark.line + 1} and line {key_node.start_mark.line + 1})",
                )
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str) -> Any:
    """`text` parsed as `yaml.safe_load` does, refusing duplicate keys (`DuplicateKeyError`)."""
    return yaml.load(text, Loader=UniqueKeyLoader)
