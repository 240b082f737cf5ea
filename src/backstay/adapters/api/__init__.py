"""The API adapters: one LLM API call per attempt through the official SDKs.

``base`` (``ApiAdapter``) does settings, the SDK import, key and base URL, deadline and
stall handling, the transcript, classification, usage and price once; ``anthropic``,
``openai`` and ``gemini`` each write only their call. ``settings`` checks their keys and
``_tls`` builds the one SSL context they share.
"""
