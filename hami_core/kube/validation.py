"""What the API server refuses in a Node or a Lease, and how it stores what it accepts (for the in-memory
cluster). Each failure is an ``Invalid`` naming the field, like the server's 422."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hami_core.k8snames import is_dns_subdomain, is_label_value, is_qualified_name
from hami_core.kube.port import Invalid
from hami_core.kube.quantity import QuantityError, canonical_quantity, parse_quantity
from hami_core.protocol.errors import shorten
from hami_core.protocol.size import MAX_ANNOTATION_BYTES

__all__ = [
    "canonical_resources",
    "string_map",
    "validate_lease",
    "validate_metadata",
    "validate_name",
]


def validate_name(name: str, where: str) -> None:
    """An object name must be a DNS subdomain (lower case, at most 253 characters)."""
    if not is_dns_subdomain(name):
        raise Invalid(f"{where} metadata.name {shorten(name)} must be a DNS subdomain", status=422)


def string_map(value: object, where: str) -> dict[str, str]:
    """A JSON object of strings (labels, annotations, resource lists); ``None`` is empty."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise Invalid(f"{where}: must be a map of strings to strings")
    return dict(value)


def validate_metadata(obj: Mapping[str, Any], where: str) -> None:
    """Labels, annotation keys and the total annotation size of a raw object."""
    meta = obj.get("metadata", {})
    labels = string_map(meta.get("labels"), f"{where} metadata.labels")
    annotations = string_map(meta.get("annotations"), f"{where} metadata.annotations")
    for key, value in labels.items():
        if not is_qualified_name(key) or not is_label_value(value):
            raise Invalid(f"{where} metadata.labels: invalid label {key!r}: {shorten(value)}", status=422)
    for key in annotations:
        if not is_qualified_name(key.lower()):
            raise Invalid(f"{where} metadata.annotations: {shorten(key)} is not a valid key", status=422)
    size = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
    if size > MAX_ANNOTATION_BYTES:
        raise Invalid(
            f"{where} metadata.annotations: too long: {size} bytes, at most {MAX_ANNOTATION_BYTES} allowed"
        )


def validate_lease(body: Mapping[str, Any], where: str) -> None:
    """What the API server's ``ValidateLease`` checks of the fields the port's Leases have."""
    validate_name(body["metadata"]["name"], where)
    spec = body["spec"]
    duration, transitions = spec.get("leaseDurationSeconds"), spec.get("leaseTransitions")
    if duration is not None and duration <= 0:
        raise Invalid(f"{where} spec.leaseDurationSeconds: {duration} must be greater than 0", status=422)
    if transitions is not None and transitions < 0:
        raise Invalid(
            f"{where} spec.leaseTransitions: {transitions} must be greater than or equal to 0", status=422
        )


#: Resources the API server counts in whole units besides extended ones (``apis/core/helper``).
_INTEGER_RESOURCES = frozenset(
    {"pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps"}
    | {"persistentvolumeclaims", "services.nodeports", "services.loadbalancers"}
)


def canonical_resources(value: object, where: str) -> dict[str, str]:
    """Validate a resource list as Node validation does, and store its quantities in canonical form."""
    result: dict[str, str] = {}
    for name, text in string_map(value, where).items():
        if not is_qualified_name(name):
            raise Invalid(f"{where}[{name!r}]: not a valid resource name", status=422)
        try:
            result[name] = canonical_quantity(text)
            amount = parse_quantity(result[name])
        except QuantityError as err:
            raise Invalid(f"{where}[{name!r}]: {err}", status=400) from None
        if amount < 0:
            raise Invalid(f"{where}[{name!r}]: {text} must be greater than or equal to 0", status=422)
        extended = "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")
        if (extended or name in _INTEGER_RESOURCES) and amount.denominator != 1:
            raise Invalid(f"{where}[{name!r}]: {text} must be an integer", status=422)
    return result
