"""What the tests share and are not tests: running the ``flujo`` command (cli_helpers), the fake provider
server (fakes/), a throwaway PostgreSQL (postgres_server), golden files (golden), capped child processes
(capped), the fuzzer's input (fuzz_input), recorded lens runs (lens_runs), storage measurements
(storage_growth), blueprint findings as rows (blueprint_findings) and the Python functions blueprints name
as agents (blueprint_skills and the *_agents modules). Test data is in tests/data and tests/golden."""
