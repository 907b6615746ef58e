"""Why a case's time changed: base against head, in its launches and compiled code (`diff`), as
tilegate.fingerprint.record recorded them while measuring. Imports neither report nor run."""
