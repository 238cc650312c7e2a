"""Configuration files checked against the schemas shipped with the package (``dperm/schemas``).

:func:`validate` fills in every default the schema declares and turns schema violations into one
:class:`ConfigError` that names the file, the key and what is allowed, instead of a schema dump.
It needs neither Snakemake nor the ``workflow/`` folder: ``import dperm`` and ``python -m dperm``
check paper configurations the same way the workflow does.
"""

from __future__ import annotations

import copy
import functools
import re
from importlib import resources
from pathlib import Path

import yaml

SCHEMAS = ("config", "paper")
# libyaml's parser when PyYAML has it (its wheels do): the same documents, about 9x faster. Every
# Snakemake process parses the configs, and on a cluster every job starts two (docs/performance.md).
_BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# YAML 1.1 (PyYAML) reads 1e-8 and 1e6 as strings: its float pattern wants a dot. Every DP paper
# writes delta as 1e-8, so the loader reads exponent notation as the number it is (YAML 1.2).
_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")


class ConfigError(ValueError):
    """A configuration value a user can fix; the message says where, what and what is allowed."""


@functools.cache
def schema(name: str) -> dict:
    """The schema ``name`` (``config`` or ``paper``), from the package data."""
    if name not in SCHEMAS:
        raise ValueError(f"unknown schema {name!r}; known: {SCHEMAS}")
    text = resources.files("dperm.schemas").joinpath(f"{name}.schema.yaml").read_text(encoding="utf-8")
    return load_yaml_text(text, name)


@functools.cache
def _validator_class():
    import jsonschema

    base = jsonschema.Draft202012Validator
    check_properties = base.VALIDATORS["properties"]

    def properties_with_defaults(validator, properties, instance, subschema):
        if isinstance(instance, dict):
            for key, sub in properties.items():
                if isinstance(sub, dict) and "default" in sub and key not in instance:
                    instance[key] = copy.deepcopy(sub["default"])
        yield from check_properties(validator, properties, instance, subschema)

    return jsonschema.validators.extend(base, {"properties": properties_with_defaults})


def _numbers_from_strings(instance: dict, validator) -> None:
    """Where the schema wants a number and finds a string in exponent notation (``"1e-8"``, as
    Snakemake's own YAML loader leaves it in a config file it reads), the number it writes, in
    place; every other value is left for validation to judge."""
    for _ in range(100):  # a fixed point: each pass fixes what the errors of the last one name
        fixes = [e for e in validator.iter_errors(instance) if e.validator == "type" and isinstance(e.instance, str)
                 and {"number", "integer"} & set(e.validator_value if isinstance(e.validator_value, list)
                                                else [e.validator_value]) and _FLOAT.match(e.instance.strip())]
        if not fixes:
            return
        for error in fixes:
            *parents, last = list(error.absolute_path)
            node = instance
            for key in parents:
                node = node[key]
            value = float(error.instance)
            node[last] = int(value) if "integer" in str(error.validator_value) and value.is_integer() else value


def _where(error) -> str:
    path = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return path.lstrip(".") or "(top level)"


def _short(value, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _message(error) -> str:
    """One line per violation: the key, the offending value and what is allowed."""
    kind, sub = error.validator, error.schema
    if kind == "additionalProperties":
        allowed = sorted(sub.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed)) if isinstance(error.instance, dict) else []
        hint = f"; allowed keys: {allowed}" if allowed else ""
        return f"unknown key(s) {extra}{hint}"
    if kind == "enum":
        return f"{_short(error.instance)} is not allowed; allowed: {error.validator_value}"
    if kind == "propertyNames":
        return f"key {_short(error.instance)} is not allowed ({error.message})"
    if kind == "required":
        return error.message
    if kind in ("oneOf", "anyOf"):
        enums = [v for s in error.validator_value for v in s.get("enum", [])]
        patterns = [s["pattern"] for s in error.validator_value if "pattern" in s]
        if enums and len(enums) + len(patterns) >= len(error.validator_value):
            more = f", or a name matching {' or '.join(patterns)}" if patterns else ""
            return f"{_short(error.instance)} is not allowed; allowed: {enums}{more}"
        options = [s.get("description") or s.get("enum") or s.get("type") for s in error.validator_value]
        return f"{_short(error.instance)} matches none of the allowed forms: {options}"
    return f"{_short(error.instance)}: {error.message if len(error.message) < 200 else kind + ' violated'}"


def validate(instance: dict, name: str, source: str) -> dict:
    """``instance`` checked against schema ``name``, defaults filled in place (and returned).
    Raises :class:`ConfigError` listing every violation as ``source: key: problem``."""
    return validate_against(instance, schema(name), source)


def validate_against(instance: dict, schema_: dict, source: str) -> dict:
    """``instance`` checked against the JSON schema ``schema_`` (a plugin's, say), defaults filled
    in place (and returned); violations as in :func:`validate`."""
    if not isinstance(instance, dict):
        raise ConfigError(f"{source}: expected a mapping of keys to values, got {_short(instance)}")
    validator = _validator_class()(schema_)
    _numbers_from_strings(instance, validator)
    errors = sorted(validator.iter_errors(instance), key=lambda e: (list(map(str, e.absolute_path)), e.validator))
    if errors:
        lines = [f"{source}: {_where(e)}: {_message(e)}" for e in errors]
        raise ConfigError("invalid configuration\n  " + "\n  ".join(lines))
    return instance


class StrictLoader(_BASE_LOADER):
    """PyYAML's safe loader (on libyaml's parser where PyYAML has it), stricter and closer to
    YAML 1.2: a key given twice in one mapping is an error naming the key and both lines (PyYAML
    keeps the last silently), and 1e-8 is a number (PyYAML reads it as a string)."""

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # '<<: *anchor': its keys may be overridden here
                continue
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, (str, int, float, bool)) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice in one mapping (first on line {seen[key] + 1}, again "
                    f"on line {key_node.start_mark.line + 1}); the second would silently replace the first",
                    key_node.start_mark)
            seen.setdefault(key, key_node.start_mark.line)
        return super().construct_mapping(node, deep)


StrictLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))


def load_yaml_text(text: str, source: str):
    """YAML text read with :class:`StrictLoader`; a YAML error is a :class:`ConfigError` naming
    ``source`` and the line."""
    try:
        return yaml.load(text, Loader=StrictLoader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark is not None else str(source)
        problem = getattr(err, "problem", None) or str(err)
        raise ConfigError(f"{where}: not valid YAML: {problem}") from None


def read_yaml(path) -> dict:
    """A YAML file as a mapping (:func:`load_yaml_text`); a missing or unreadable file is a
    :class:`ConfigError`."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such configuration file")
    data = load_yaml_text(path.read_text(encoding="utf-8"), str(path))
    return {} if data is None else data


def load_spec(text: str):
    """A spec given inline as JSON, or as @path to a JSON file (how rules hand a job its spec)."""
    import json

    return json.loads(Path(text[1:]).read_text() if text.startswith("@") else text)
