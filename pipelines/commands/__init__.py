"""The command layer: each ``python -m pipelines`` command that prints a report runs here, on the
typed functions of the package (``lookup``, ``audit``, ``validate``, ``verify``/``repair``,
``dump``), and turns their results into text or JSON and an exit code.  The modules of the job
itself return result objects and raise :class:`store_format.errors.StoreError` for what a user can
fix; only :mod:`pipelines.cli` and these modules print."""
