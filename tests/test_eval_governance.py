"""`remem eval governance` runs its scenarios on fresh databases and reports each."""

from __future__ import annotations

from remem.embed import HashEmbedder
from remem.eval.governance import SCENARIOS, run_governance


def test_every_scenario_runs_and_the_governance_ones_pass() -> None:
    report = run_governance(HashEmbedder())
    names = [s["name"] for s in report["scenarios"]]
    assert len(names) == len(SCENARIOS) == report["total"]
    by_name = {s["name"]: s for s in report["scenarios"]}
    # these do not depend on how good the embedder is: they must all hold
    for name in ("write precision/recall", "contradictions", "isolation", "staleness",
                 "deletion", "adversarial"):  # fmt: skip
        assert by_name[name]["passed"], by_name[name]
    assert by_name["adversarial"]["secret_leaked"] is False
    assert by_name["isolation"]["other_tenant"] == 0
    assert by_name["write precision/recall"]["precision"] >= 0.95
