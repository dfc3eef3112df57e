"""One module per stage. Each computes a frozen plan from typed specs without starting a
process (``plan_*``), and executes it in a separate function (``run_*``)."""
