"""The stages, one module each (``source``, ``toolkit``, ``configure``, ``build``, ``verify``,
``merge``, ``package``, ``smoke``, ``manifest``, ``publish``; the registry ``stages``). Each
computes a frozen plan from typed specs without starting a process (``plan_*``), and executes it
in a separate function (``run_*``). Beside them, what only the stages use: their shared context
(``base``), records (``stage_records``) and cleanup (``cleanup``); the local-build overrides
applied as the specs load (``overrides``); a mix release's source (``mix``); the archive check
(``archivecheck``); the paired upstream assets' hashes (``paired_assets``); the GitHub Actions
hand-off (``ci``); and the helper rooms ``compile/`` and ``bundle/``."""
