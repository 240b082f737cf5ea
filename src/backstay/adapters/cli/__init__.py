"""The agent-CLI adapters and the subprocess plumbing they share.

``process`` (``run_process``, the one place a subprocess is started, with ``_pump``
reading its output and ``orphans`` killing what escapes its process group), ``base`` and
``settings`` (what every CLI adapter shares), and one folder per agent: ``claude_code``,
``codex``, ``gemini_cli``, ``opencode``, ``aider``.
"""
