"""PySpark orchestration of the offline rebuild: plan splits → scan → chain → build → commit → tables."""
