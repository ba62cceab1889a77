"""What ``validate`` found: :class:`ValidationReport` with one :class:`SuiteOutcome` per suite and one
:class:`Failure` per failing expectation, as the command prints it (text or ``--json``)."""
from __future__ import annotations

import dataclasses

from .figures import Figures

__all__ = ["Failure", "SuiteOutcome", "ValidationReport"]


@dataclasses.dataclass
class Failure:
    """A failing expectation and what was observed."""
    suite: str
    expectation: str                 # GX expectation type, e.g. expect_column_values_to_be_between
    column: str                      # the figure checked ("a,b" for a pair, "" for the table)
    rule: str
    observed: str
    catches: str

    def line(self) -> str:
        return f"FAIL {self.suite}: {self.rule} -- observed: {self.observed}"


@dataclasses.dataclass
class SuiteOutcome:
    """The statistics of one suite's validation result."""
    name: str
    success: bool
    evaluated: int
    successful: int
    unsuccessful: int
    page: str | None = None          # the GX validation page, relative to the docs folder


@dataclasses.dataclass
class ValidationReport:
    """What :func:`pipelines.validate.validate_tables` found."""
    tables: str
    success: bool
    suites: list[SuiteOutcome]
    failures: list[Failure]
    anomaly_counts: dict[str, int]
    latest_run: str | None
    docs: str | None                 # path of the docs index (None: not written)
    seconds: float
    figures: Figures | None = dataclasses.field(default=None, repr=False)
    engine: str = "arrow"            # what computed the figures: arrow (delta-rs, Arrow) or spark
    read_with: str = "delta-rs"      # how the tables were read: delta-rs, delta-spark, or spark-parquet
    gx_data_source: str = "pandas"   # the type of GX data source the suites ran on: pandas or spark

    @property
    def evaluated(self) -> int:
        return sum(s.evaluated for s in self.suites)

    @property
    def unsuccessful(self) -> int:
        return sum(s.unsuccessful for s in self.suites)

    def to_dict(self) -> dict:
        return {"tables": self.tables, "success": self.success, "latest_run": self.latest_run,
                "expectations": self.evaluated, "failed": self.unsuccessful,
                "suites": [dataclasses.asdict(s) for s in self.suites],
                "failures": [dataclasses.asdict(f) | {"line": f.line()} for f in self.failures],
                "anomalies": self.anomaly_counts, "docs": self.docs, "seconds": self.seconds,
                "engine": self.engine, "read_with": self.read_with, "gx_data_source": self.gx_data_source}

    def render(self) -> str:
        verdict = "PASSED" if self.success else "FAILED"
        lines = [f"validation     {verdict}: {self.evaluated - self.unsuccessful} of {self.evaluated} expectations "
                 f"hold in {len(self.suites)} suites ({self.tables}, latest run {self.latest_run or 'none'})"]
        lines += [f.line() for f in self.failures]
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(self.anomaly_counts.items())) or "none"
        lines.append(f"anomalies      {kinds}")
        if self.docs:
            lines.append(f"data docs      {self.docs}")
        return "\n".join(lines)
