"""NVIDIA's pair scores kept beside its devices (spec 1b): shown in /cache/<node>; a malformed value keeps
the devices without scores, with one Warning Event (HAMi refuses the whole NVIDIA registration)."""

from __future__ import annotations

from typing import Any

from harness.scheduler_world import World

REGISTER = (
    '[{"id":"GPU-0","count":10,"devmem":24576,"devcore":100,"type":"NVIDIA-A10","health":true},'
    '{"id":"GPU-1","count":10,"devmem":24576,"devcore":100,"type":"NVIDIA-A10","health":true}]'
)
SCORES = '[{"uuid":"GPU-1","score":{"GPU-0":40}},{"uuid":"GPU-0","score":{"GPU-1":40}},{"uuid":"GPU-0"}]'
SCORE = "hami.io/node-nvidia-score"


def warnings(world: World, node: str) -> list[dict[str, Any]]:
    return [e for e in world.events_about(node) if e.get("reason") == "HamiPairScoresInvalid"]


def test_scores_are_kept_with_the_devices_and_a_bad_value_keeps_the_devices(world: World) -> None:
    node = world.node(
        "gpu", {"hami.io/node-nvidia-register": REGISTER, SCORE: SCORES}, {"nvidia.com/gpu": "2"}
    )
    replica = world.scheduler("nvidia")

    def scores() -> dict[str, Any]:
        entry = replica.cache.vendor(node, "NVIDIA")
        return {} if entry is None else entry.to_json()["pair_scores"]

    world.run_until("scores", lambda: scores() == {"GPU-0": {"GPU-1": 40}, "GPU-1": {"GPU-0": 40}})
    shown = replica.node_json(node)
    assert shown is not None
    assert shown["vendors"]["NVIDIA"]["pair_scores"] == {"GPU-0": {"GPU-1": 40}, "GPU-1": {"GPU-0": 40}}
    assert shown["vendors"]["NVIDIA"]["source"] == "annotation"
    # A value Go's decoder refuses: the devices stay, without scores, and a Warning says why.
    world.admin.patch_node_annotations(node, {SCORE: '[{"uuid":"GPU-0","score":{"GPU-1":"high"}}]'})
    world.run_until("scores dropped", lambda: scores() == {})
    entry = replica.cache.vendor(node, "NVIDIA")
    assert entry is not None and entry.state == "registered" and len(entry.devices) == 2
    (event,) = world.run_until("the warning", lambda: warnings(world, node))
    assert event["type"] == "Warning"
    assert (
        'annotation hami.io/node-nvidia-score: [0].score.GPU-1: cannot decode a string "high" into Go int64'
        in event["message"]
    )
    assert "without pair scores" in event["message"]
    # The register value changing re-matches the scores it has, with no second Warning for the same value.
    world.admin.patch_node_annotations(node, {SCORE: SCORES})
    world.run_until("scores back", lambda: scores() == {"GPU-0": {"GPU-1": 40}, "GPU-1": {"GPU-0": 40}})
    world.admin.patch_node_annotations(node, {SCORE: None})
    world.run_until("no scores", lambda: scores() == {})
    world.settle()
    assert len(warnings(world, node)) == 1
