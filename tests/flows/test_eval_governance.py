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
                 "deletion", "adversarial", "exact lookup"):  # fmt: skip
        assert by_name[name]["passed"], by_name[name]
    assert by_name["adversarial"]["secret_leaked"] is False
    assert by_name["isolation"]["other_tenant"] == 0
    assert by_name["write precision/recall"]["precision"] >= 0.95
    metrics = report["metrics"]
    assert metrics["isolation"] == 1.0 and metrics["deletion"] == 1.0
    assert metrics["write_precision"] >= 0.95 and metrics["write_recall"] >= 0.85
    assert metrics["secret_never_stored"] == 1.0 and metrics["poisoned_procedure_refused"] == 1.0
    assert 0.0 <= metrics["useful_retrieval"] <= 1.0 and metrics["noise"] == 0.0
    for case in ("set", "corrected", "conflict", "expired", "erased"):
        assert metrics[f"exact_{case}"] == 1.0, case
