"""Why a case's time changed: base against head, in its launches and compiled code.

`diff` compares the two sides of an A/B pair and says what differs, most telling first. What it
compares was recorded while measuring: tilegate.fingerprint.record (called by
tilegate.harness.identity) records what each case's call launched and the compile facts of its
Triton kernels, read by tilegate.fingerprint.facts out of TTGIR / PTX / metadata. Plain data:
this package sits above tilegate.harness and tilegate.fingerprint and imports neither
tilegate.report nor tilegate.run.
"""
