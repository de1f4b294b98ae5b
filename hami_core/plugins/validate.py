"""Checks a driver's self-description, field by field, and turns it into a ``VendorDriver``; each refusal
is a ``DriverError`` whose one-line message names the driver, its package and the field."""

from __future__ import annotations

import functools
from collections.abc import Callable

import attrs

from hami_core.k8snames import is_dns_label, is_label_value, qualified_name_problem
from hami_core.plugins.driver import VendorDriver, origin_of
from hami_core.plugins.errors import DriverError
from hami_core.plugins.hookspecs import VendorSpec
from hami_core.protocol.codecs import CODECS, Codec
from hami_core.protocol.decide import VendorRules
from hami_core.protocol.liveness import BUILTIN_RULES, LivenessRule
from hami_core.protocol.nodesource import FromNode

__all__ = [
    "annotation_key_problem",
    "driver_from_spec",
    "driver_name_problem",
    "resource_name_problem",
    "vendor_key_problem",
]


def annotation_key_problem(key: object) -> str | None:
    """Why Kubernetes would reject ``key`` as an annotation key (a qualified name it lower-cases before
    checking), or ``None``."""
    return _qualified_problem(key.lower() if isinstance(key, str) else key)


def resource_name_problem(name: object) -> str | None:
    """Why ``name`` is not a valid extended resource name (``domain/name``), or ``None``."""
    if not isinstance(name, str):
        return f"it must be a resource name string, got {name!r} ({type(name).__name__})"
    return qualified_name_problem(name, prefix_required=True)


def driver_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a driver (lower case letters, digits and ``-``, at most 63), or ``None``."""
    if not isinstance(name, str):
        return f"it must be a string, got {type(name).__name__}"
    if not is_dns_label(name):
        return "it must be 1-63 lower case letters, digits or '-', starting and ending with a letter or digit"
    return None


def vendor_key_problem(key: object) -> str | None:
    """Why ``key`` cannot be a vendor key (letters, digits, ``-_.``, at most 63), or ``None``."""
    if not isinstance(key, str):
        return f"it must be a string, got {type(key).__name__}"
    if not key or not is_label_value(key):  # the name part of a qualified name
        return "it must be 1-63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
    return None


def _codec(encoding: object, refuse: Callable[[str], DriverError]) -> Codec:
    """The codec for ``encoding``; ``refuse`` says why there is none."""
    if isinstance(encoding, str):
        if encoding not in CODECS:
            known = ", ".join(sorted(CODECS))
            raise refuse(f"encoding {encoding!r} is unknown (known: {known}; or pass a codec object)")
        return CODECS[encoding]
    not_callable = [attr for attr in ("encode", "decode") if not callable(getattr(encoding, attr, None))]
    if not_callable:
        raise refuse(f"encoding {encoding!r} is not a codec: {' and '.join(not_callable)} not callable")
    name = getattr(encoding, "name", None)
    if not isinstance(name, str) or not name:
        raise refuse(f"encoding {encoding!r} is not a codec: it has no name")
    assert isinstance(encoding, Codec)
    return encoding


def _liveness(rule: object, refuse: Callable[[str], DriverError]) -> LivenessRule:
    """The liveness rule for ``rule``; ``refuse`` says why there is none."""
    if isinstance(rule, str):
        if rule not in BUILTIN_RULES:
            known = ", ".join(sorted(BUILTIN_RULES))
            raise refuse(f"liveness rule {rule!r} is unknown (known: {known}; or pass a rule object)")
        return BUILTIN_RULES[rule]
    name = getattr(rule, "name", None)
    if not isinstance(name, str) or not name or not callable(getattr(rule, "alive", None)):
        raise refuse(f"liveness {rule!r} is not a rule: it needs a name and alive(facts)")
    assert isinstance(rule, LivenessRule)
    return rule


def _field_problem(spec: VendorSpec) -> str | None:
    """The first field of ``spec`` (its name already checked) that is wrong, as a message."""
    if problem := vendor_key_problem(spec.vendor_key):
        return f"vendor_key {spec.vendor_key!r} is malformed: {problem}"
    if spec.register_annotation is None and spec.from_node is None:
        return "it names no source of devices: give a register_annotation, from_node, or both"
    if spec.register_annotation is not None and (problem := annotation_key_problem(spec.register_annotation)):
        return f"register_annotation {spec.register_annotation!r} is not a valid annotation key: {problem}"
    handshake = spec.handshake_annotation
    if handshake is not None:
        if spec.register_annotation is None:
            return "handshake_annotation is given without a register_annotation (a handshake is its)"
        if problem := annotation_key_problem(handshake):
            return f"handshake_annotation {handshake!r} is not a valid annotation key: {problem}"
        if handshake == spec.register_annotation:
            return "handshake_annotation is the same key as register_annotation"
    scores = spec.pair_scores_annotation
    if scores is not None:
        if spec.register_annotation is None:
            return (
                "pair_scores_annotation is given without a register_annotation (the scores are its devices')"
            )
        if problem := annotation_key_problem(scores):
            return f"pair_scores_annotation {scores!r} is not a valid annotation key: {problem}"
        if scores in (spec.register_annotation, spec.handshake_annotation):
            return "pair_scores_annotation is the same key as the register or handshake annotation"
    if problem := resource_name_problem(spec.count_resource):
        return f"count_resource {spec.count_resource!r} is malformed: {problem}"
    if not isinstance(spec.writes_reported, bool):
        return f"writes_reported must be True or False, got {spec.writes_reported!r}"
    return None if spec.from_node is None else _node_source_problem(spec.from_node)


def _node_source_problem(source: object) -> str | None:
    """What is wrong with a ``from_node`` declaration, or ``None``."""
    if not isinstance(source, FromNode):
        return f"from_node must be a FromNode, got {type(source).__name__}"
    if not callable(source.devices):
        return f"from_node.devices must be a function of the Node view, got {source.devices!r:.60}"
    if not (source.capacity or source.allocatable or source.annotations):
        return "from_node reads no capacity, allocatable or annotation (labels alone are on every Node)"
    for field in ("capacity", "allocatable"):
        for name in getattr(source, field):
            if problem := _qualified_problem(name):
                return f"from_node.{field} {name!r} is not a resource name: {problem}"
    for key in source.annotations:
        if problem := annotation_key_problem(key):
            return f"from_node.annotations {key!r} is not a valid annotation key: {problem}"
    for key in source.labels:
        if problem := _qualified_problem(key):
            return f"from_node.labels {key!r} is not a valid label key: {problem}"
    return None


def _qualified_problem(name: object) -> str | None:
    """Why ``name`` is no resource name (``cpu`` or ``domain/name``) or label key, or ``None``."""
    if not isinstance(name, str):
        return f"it must be a string, got {type(name).__name__}"
    return qualified_name_problem(name, prefix_required=False)


def driver_from_spec(spec: object, *, plugin: str, package: str, version: str) -> VendorDriver:
    """Check one ``VendorSpec`` and build the ``VendorDriver``; raise ``DriverError`` naming the bad field."""
    origin = origin_of(plugin, package, version)
    refuse_plugin = functools.partial(DriverError, plugin, origin, kind="plugin")
    if not isinstance(spec, VendorSpec):
        raise refuse_plugin(f"hami_vendor_drivers must yield VendorSpec records, got {type(spec).__name__}")
    if problem := driver_name_problem(spec.name):
        raise refuse_plugin(f"driver name {spec.name!r} is malformed: {problem}")
    refuse = functools.partial(DriverError, spec.name, origin)
    if problem := _field_problem(spec):
        raise refuse(problem)
    liveness = _liveness(spec.liveness, refuse)
    codec = None if spec.register_annotation is None else _codec(spec.encoding, refuse)
    source = spec.from_node
    if source is not None:
        node_liveness = _liveness(source.liveness, lambda detail: refuse(f"from_node: {detail}"))
        source = attrs.evolve(source, liveness=node_liveness)
        if spec.register_annotation is None:
            liveness = node_liveness
    try:
        rules = VendorRules(
            vendor_key=spec.vendor_key,
            register_annotation=spec.register_annotation,
            handshake_annotation=spec.handshake_annotation,
            count_resource=spec.count_resource,
            liveness=liveness,
            codec=codec,
            node_source=source,
            pair_scores_annotation=spec.pair_scores_annotation,
        )
    except (TypeError, ValueError) as error:  # the checks above leave nothing for these; say it anyway
        raise refuse(str(error).splitlines()[0]) from error
    return VendorDriver(
        name=spec.name,
        vendor=rules,
        writes_reported=spec.writes_reported,
        plugin=plugin,
        package=package,
        version=version,
    )
