"""Configuration files checked against the schemas shipped with the package (``dperm/schemas``).

:func:`validate` fills in every default the schema declares and turns schema violations into one
:class:`ConfigError` that names the file, the key and what is allowed, instead of a schema dump.
It needs neither Snakemake nor the ``workflow/`` folder: ``import dperm`` and ``python -m dperm``
check paper configurations the same way the workflow does.
"""

from __future__ import annotations

import copy
import functools
from importlib import resources
from pathlib import Path

import yaml

SCHEMAS = ("config", "paper")
# libyaml's parser when PyYAML has it (its wheels do): the same documents, about 9x faster. Every
# Snakemake process parses the configs, and on a cluster every job starts two (docs/performance.md).
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load(text: str):
    return yaml.load(text, Loader=_LOADER)


class ConfigError(ValueError):
    """A configuration value a user can fix; the message says where, what and what is allowed."""


@functools.cache
def schema(name: str) -> dict:
    """The schema ``name`` (``config`` or ``paper``), from the package data."""
    if name not in SCHEMAS:
        raise ValueError(f"unknown schema {name!r}; known: {SCHEMAS}")
    text = resources.files("dperm.schemas").joinpath(f"{name}.schema.yaml").read_text(encoding="utf-8")
    return _load(text)


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
    if not isinstance(instance, dict):
        raise ConfigError(f"{source}: expected a mapping of keys to values, got {_short(instance)}")
    validator = _validator_class()(schema(name))
    errors = sorted(validator.iter_errors(instance), key=lambda e: (list(map(str, e.absolute_path)), e.validator))
    if errors:
        lines = [f"{source}: {_where(e)}: {_message(e)}" for e in errors]
        raise ConfigError("invalid configuration\n  " + "\n  ".join(lines))
    return instance


def read_yaml(path) -> dict:
    """A YAML file as a mapping; a missing or unreadable file is a :class:`ConfigError`."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such configuration file")
    try:
        data = _load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from None
    return {} if data is None else data
