"""Pipeline SLIs: what each one measures, its thresholds, and the alert state machine (pure)."""
