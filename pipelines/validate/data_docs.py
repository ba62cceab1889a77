"""The Data Docs folder of ``validate``: where it goes, and its static entry page.

``DOCS/gx`` is Great Expectations' own Data Docs site (one validation page per suite, written by
:mod:`.gx_runner`); ``DOCS/index.html`` is a static page of this run (suites, pass/fail counts,
failing expectations with their observed values, anomaly counts) linking to GX's pages: GX's own
index builds its tables with JavaScript from public CDNs and stays empty offline.  The default
``DOCS`` is ``TABLES/_data_docs``: table readers open the six tables by name, and Spark, Hive and
Delta readers skip folders starting with ``_``.  A folder is only reused when its ``index.html``
was written by this command, so ``--docs`` never replaces another tool's pages.
"""
from __future__ import annotations

import datetime as _dt
import html
import os

from .errors import ValidationSetupError
from .report import ValidationReport

__all__ = ["DOCS_FOLDER", "GX_SITE", "docs_folder", "write_index"]

DOCS_FOLDER = "_data_docs"          # default Data Docs folder under the tables root
GX_SITE = "gx"                      # GX's own Data Docs site inside the docs folder
_INDEX_MARKER = '<meta name="generator" content="rocketmq-offline-index validate">'


def docs_folder(tables: str, docs: str | None) -> str:
    """The Data Docs folder to write (``docs``, default ``TABLES/_data_docs``), checked writable before
    the checks run.

    Raises:
        ValidationSetupError: the tables are remote and no ``docs`` is given, ``docs`` is a file, or it
            holds an ``index.html`` or ``gx/`` that this command did not write.
    """
    if docs is None:
        if "://" in tables and not tables.startswith("file://"):
            raise ValidationSetupError(f"{tables} is not a local folder: give --docs a local folder for the Data Docs")
        root = tables[len("file://"):] if tables.startswith("file://") else tables
        docs = os.path.join(root, DOCS_FOLDER)
    docs = os.path.abspath(docs)
    if os.path.exists(docs) and not os.path.isdir(docs):
        raise ValidationSetupError(f"{docs} exists and is not a folder: choose another --docs folder")
    from ..preflight import check_writable_folder
    check_writable_folder(docs, "--docs", "it receives the Data Docs")   # before the checks run
    index = os.path.join(docs, "index.html")
    ours = False
    if os.path.exists(index):
        with open(index, encoding="utf-8", errors="replace") as f:
            ours = _INDEX_MARKER in f.read(4096)
    # the previous run's pages are replaced: only in a folder this command wrote
    if (os.path.exists(index) or os.path.exists(os.path.join(docs, GX_SITE))) and not ours:
        raise ValidationSetupError(f"{docs} already holds an index.html or {GX_SITE}/ not written by validate: "
                                   "choose another --docs folder")
    return docs


def write_index(docs_dir: str, report: ValidationReport) -> str:
    """``DOCS/index.html``: this run's verdict as static HTML (readable offline), linking to GX's pages."""
    e = html.escape
    verdict = "PASSED" if report.success else "FAILED"
    suites = "\n".join(
        f"<tr class=\"{'pass' if s.success else 'fail'}\"><td>"
        + (f"<a href=\"{e(s.page)}\">{e(s.name)}</a>" if s.page else e(s.name))
        + f"</td><td>{'passed' if s.success else 'FAILED'}</td><td>{s.evaluated}</td><td>{s.successful}</td>"
          f"<td>{s.unsuccessful}</td></tr>" for s in report.suites)
    fails = "\n".join(f"<li><b>{e(f.suite)}</b>: {e(f.rule)}<br>observed: <code>{e(f.observed)}</code><br>"
                      f"<small>catches: {e(f.catches)}</small></li>" for f in report.failures) or "<li>none</li>"
    kinds = "\n".join(f"<tr><td>{e(k)}</td><td>{v}</td></tr>" for k, v in sorted(report.anomaly_counts.items())) \
        or "<tr><td colspan=\"2\">none</td></tr>"
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
{_INDEX_MARKER}
<title>RocketMQ tables validation: {verdict}</title>
<style>body{{font-family:sans-serif;margin:2em}} table{{border-collapse:collapse}}
td,th{{border:1px solid #999;padding:4px 8px;text-align:left}} tr.fail td{{background:#fdd}}
tr.pass td{{background:#dfd}} code{{white-space:pre-wrap}}</style></head>
<body>
<h1>RocketMQ tables validation: <span id="verdict">{verdict}</span></h1>
<p>Tables: <code>{e(report.tables)}</code> &middot; latest run: <code>{e(report.latest_run or 'none')}</code>
&middot; validated {now} &middot; {report.evaluated - report.unsuccessful} of {report.evaluated} expectations hold,
{report.unsuccessful} failed.</p>
<h2>Expectation suites</h2>
<table id="suites"><tr><th>suite</th><th>status</th><th>evaluated</th><th>successful</th><th>unsuccessful</th></tr>
{suites}
</table>
<h2>Failing expectations</h2>
<ul id="failures">
{fails}
</ul>
<h2>Anomalies by kind</h2>
<table id="anomalies"><tr><th>kind</th><th>rows</th></tr>
{kinds}
</table>
<p>Each suite links to its Great Expectations validation page; the
<a href="{GX_SITE}/index.html">Great Expectations Data Docs home</a> lists them too (its tables need JavaScript
from public CDNs).</p>
</body></html>
"""
    os.makedirs(docs_dir, exist_ok=True)
    path = os.path.join(docs_dir, "index.html")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(page)
    os.replace(tmp, path)
    return path

