"""The suites run with Great Expectations (the 1.x API), and GX's results read back.

An ephemeral context whose Data Docs site is ``DOCS/gx`` (:data:`pipelines.validate.data_docs.GX_SITE`);
one data source (pandas, or Spark for ``validate --engine spark``: the same suites on Spark
DataFrames of the same figures), one data asset and batch definition per frame of figures, one
:class:`ExpectationSuite`, :class:`ValidationDefinition` and :class:`Checkpoint` per suite (a
checkpoint passes one set of batch parameters, i.e. one dataframe, to all its validation
definitions).  Results use GX's ``COMPLETE`` format with the suite's id columns as
``unexpected_index_column_names``, so a failing expectation names every segment, queue or file it
failed on, in the report and in the Data Docs.  GX is an optional extra, imported only here
(:func:`import_gx`).
"""
from __future__ import annotations

import logging
import os
import shutil
import urllib.parse
import warnings
from typing import Any

import numpy as np
import pandas as pd

from .data_docs import GX_SITE
from .errors import ValidationSetupError
from .figures import Figures
from .report import Failure, SuiteOutcome
from .suites import SUITES, Check, Suite

__all__ = ["import_gx", "run_suites", "INSTALL_HINT"]

INSTALL_HINT = "pip install 'rocketmq-offline-index[validate]' (or: pip install great-expectations)"


def import_gx():
    """The Great Expectations modules and classes :func:`run_suites` needs.

    Raises:
        ValidationSetupError: Great Expectations is not installed (the message says how to install it).
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import great_expectations as gx
            import great_expectations.expectations as gxe
            from great_expectations.data_context.types.base import (
                DataContextConfig,
                InMemoryStoreBackendDefaults,
                ProgressBarsConfig,
            )
            from great_expectations.expectations.row_conditions import Column
    except ImportError as e:
        raise ValidationSetupError(f"Great Expectations is not installed ({e}); install it with {INSTALL_HINT}") \
            from None
    return gx, gxe, DataContextConfig, InMemoryStoreBackendDefaults, ProgressBarsConfig, Column


def _expectation(gxe, column_cls, check: Check):
    """The GX expectation of a check (its row condition, if any, as a GX ``Column`` condition)."""
    kwargs = dict(check.kwargs)
    cond = kwargs.pop("row_condition", None)
    if cond is not None:
        col, op, value = cond
        assert op == "=="
        kwargs["row_condition"] = column_cls(col) == value
    cls = getattr(gxe, check.expectation)
    return cls(**kwargs, description=check.rule, notes=f"Catches: {check.catches}",
               meta={"catches": check.catches})


def run_suites(gx_mod, figures: Figures, docs_dir: str | None, *, spark: Any = None
               ) -> tuple[list[SuiteOutcome], list[Failure], str]:
    """Every suite of :data:`SUITES` on its frame of ``figures``: one outcome per suite and one failure
    per failing expectation, and the type of GX data source they ran on; with ``docs_dir``, GX's
    Data Docs site is rebuilt under ``DOCS/gx``.  With ``spark`` (a ``SparkSession``), GX's Spark data
    source validates each frame as a Spark DataFrame
    (:func:`pipelines.validate.spark_figures.spark_frame`), else its pandas data source the frame itself."""
    gx, gxe, DataContextConfig, InMemoryStoreBackendDefaults, ProgressBarsConfig, Column = gx_mod
    site_dir = os.path.join(docs_dir, GX_SITE) if docs_dir else None
    sites = {}
    if site_dir is not None:
        if os.path.isdir(site_dir):
            shutil.rmtree(site_dir)  # the previous run's pages: the docs describe this run
        sites = {"tables": {"class_name": "SiteBuilder", "show_how_to_buttons": False,
                            "store_backend": {"class_name": "TupleFilesystemStoreBackend",
                                              "base_directory": site_dir},
                            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder",
                                                   "show_cta_footer": False}}}
    config = DataContextConfig(store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
                               analytics_enabled=False, progress_bars=ProgressBarsConfig(globally=False),
                               data_docs_sites=sites)
    outcomes: list[SuiteOutcome] = []
    failures: list[Failure] = []
    gx_log = logging.getLogger("great_expectations")
    old_level = gx_log.level
    gx_log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            context = gx.get_context(mode="ephemeral", project_config=config)
            if spark is not None:
                from .spark_figures import spark_frame
                source = context.data_sources.add_spark("rocketmq_tables")
            else:
                source = context.data_sources.add_pandas("rocketmq_tables")
            identifiers = []
            for suite_def in SUITES:
                asset = source.add_dataframe_asset(suite_def.frame)
                batch_def = asset.add_batch_definition_whole_dataframe("figures")
                suite = context.suites.add(gx.ExpectationSuite(name=suite_def.name, meta={"about": suite_def.about}))
                for check in suite_def.checks:
                    suite.add_expectation(_expectation(gxe, Column, check))
                vdef = context.validation_definitions.add(
                    gx.ValidationDefinition(name=suite_def.name, data=batch_def, suite=suite))
                checkpoint = context.checkpoints.add(gx.Checkpoint(
                    name=suite_def.name, validation_definitions=[vdef], actions=[],
                    result_format={"result_format": "COMPLETE", "partial_unexpected_count": 20,
                                   "unexpected_index_column_names": list(suite_def.ids)}))
                frame = figures.frame(suite_def.frame)
                data = spark_frame(spark, frame) if spark is not None else frame
                result = checkpoint.run(batch_parameters={"dataframe": data})
                for ident, vres in result.run_results.items():
                    identifiers.append(ident)
                    stats = vres.statistics
                    outcomes.append(SuiteOutcome(suite_def.name, bool(vres.success),
                                                 int(stats["evaluated_expectations"]),
                                                 int(stats["successful_expectations"]),
                                                 int(stats["unsuccessful_expectations"])))
                    by_rule = {c.rule: c for c in suite_def.checks}
                    for er in vres.results:
                        if er.success:
                            continue
                        cfg = er.expectation_config
                        failed = by_rule.get(cfg.description or "")
                        failures.append(Failure(suite_def.name, cfg.type, _column_of(failed),
                                                cfg.description or cfg.type, _observed(er, suite_def),
                                                failed.catches if failed else ""))
            if site_dir is not None:
                context.build_data_docs(site_names=["tables"])
                for outcome, ident in zip(outcomes, identifiers):
                    outcome.page = _page_of(context, ident, docs_dir)
    finally:
        gx_log.setLevel(old_level)
    return outcomes, failures, str(source.type)


def _column_of(check: Check | None) -> str:
    if check is None:
        return ""
    kw = check.kwargs
    return kw.get("column") or (f"{kw['column_A']},{kw['column_B']}" if "column_A" in kw else "")


def _page_of(context, ident, docs_dir: str | None) -> str | None:
    try:
        urls = context.get_docs_sites_urls(resource_identifier=ident, site_name="tables")
    except Exception:  # noqa: BLE001 - a missing link must not fail the validation
        return None
    for u in urls:
        url = u.get("site_url") or ""
        if url.startswith("file://") and docs_dir:
            path = urllib.parse.unquote(url[len("file://"):])
            return os.path.relpath(path, docs_dir).replace(os.sep, "/")
    return None


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if v is pd.NA or (isinstance(v, float) and np.isnan(v)):
        return None
    return v


def _observed(er, suite_def: Suite) -> str:
    """One line: the unexpected rows with their ids and values, or the observed value."""
    res = er.result or {}
    if "observed_value" in res and "unexpected_count" not in res:
        return str(_plain(res["observed_value"]))
    rows = res.get("unexpected_index_list") or res.get("partial_unexpected_index_list") or []
    total = res.get("unexpected_count")
    count = res.get("element_count")
    items = []
    for r in rows[:5]:
        if isinstance(r, dict):
            ids = " ".join(f"{k}={_plain(r[k])}" for k in suite_def.ids if k in r)
            vals = ", ".join(f"{k}={_plain(v)}" for k, v in r.items() if k not in suite_def.ids)
            items.append(f"{ids} ({vals})" if vals else ids)
        else:
            items.append(str(_plain(r)))
    if not items:
        items = [str(_plain(v)) for v in (res.get("partial_unexpected_list") or [])[:5]]
    more = f", ... {total - len(items)} more" if isinstance(total, int) and total > len(items) else ""
    head = f"{total} of {count} rows unexpected" if total is not None else "failed"
    if er.exception_info and er.exception_info.get("raised_exception"):
        head = f"error: {er.exception_info.get('exception_message')}"
    return f"{head}: {'; '.join(items)}{more}" if items else head
