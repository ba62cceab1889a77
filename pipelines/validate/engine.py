"""Which engine ``validate`` runs on where a scheduler chooses it: Spark on a cluster, Arrow locally.

The Airflow DAG (``airflow_dags/rocketmq_index_rebuild.py``) validates with ``--engine spark`` when its
Spark connection names a cluster, so that the tables are read and reduced there rather than in the
Airflow worker; on a local master the Arrow engine is faster (no JVM to start, no rows through it).
"""
from __future__ import annotations

__all__ = ["engine_for_master", "spark_master_url"]


def spark_master_url(conn_type: str | None, host: str | None, port: int | None) -> str:
    """The master URL of an Airflow Spark connection, as spark-submit gets it (mirrors
    ``SparkSubmitHook._resolve_connection`` of ``apache-airflow-providers-apache-spark``): a ``spark``
    connection whose host is a whole URL (or has no port) gives its host, any other gives
    ``<conn_type>://<host>``; then ``:<port>`` when there is one."""
    if conn_type == "spark" and host and ("://" in host or not port):
        master = host
    else:
        master = f"{conn_type}://{host or ''}"
    return f"{master}:{port}" if port else master


def engine_for_master(master: str | None) -> str:
    """``spark`` for a cluster master (``yarn``, ``spark://``, ``k8s://``, ...), ``arrow`` for a local
    one (``local``, ``local[N]``, ``local[*]``, ``local-cluster[...]`` is a cluster) or none."""
    m = (master or "").strip()
    if not m or m == "local" or (m.startswith("local[") and m.endswith("]")):
        return "arrow"
    return "spark"
