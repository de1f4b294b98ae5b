"""The in-memory cluster's label selectors: the equality terms it models, and a clear refusal of the rest
(their semantics are the real API server's; nothing hami-core sends uses them)."""

from __future__ import annotations

import pytest

from hami_core.kube.memory import MemoryCluster
from hami_core.kube.port import Invalid


@pytest.mark.parametrize("term", ["pool!=gpu", "zone", "!zone", "pool in (a,b)", "pool notin (a)", "gpus>1"])
def test_a_term_it_does_not_model_is_refused_naming_it(term: str) -> None:
    cluster = MemoryCluster()
    for call in (
        lambda: cluster.list_nodes(label_selector=f"t=x,{term}"),
        lambda: cluster.watch_nodes(resource_version="0", label_selector=f"t=x,{term}"),
    ):
        with pytest.raises(Invalid) as refused:
            call()
        first = term.split(",")[0]  # the term up to its first comma
        assert f"{first!r} is not a k=v term" in str(refused.value)


@pytest.mark.parametrize(
    ("selector", "what"),
    [
        ("-bad=1", "'-bad' is not a valid label key"),
        ("pool=in valid", "'in valid' is not a valid label value"),
    ],
)
def test_a_bad_key_or_value_is_named(selector: str, what: str) -> None:
    with pytest.raises(Invalid) as refused:
        MemoryCluster().list_nodes(label_selector=selector)
    assert what in str(refused.value)
