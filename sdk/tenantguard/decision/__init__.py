"""The one decision core (``core``: built-in checks, relations, policy, a typed result) and the
verdict memo it keeps for pure policies (``verdicts``)."""
