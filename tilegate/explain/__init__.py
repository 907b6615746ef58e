"""Why a case's time changed: base against head, in its launches and compiled code.

`record` (called by tilegate.harness.identity) records what each case's call launched and the
compile facts of its Triton kernels; `facts` reads those facts out of TTGIR / PTX / metadata;
`diff` compares the two sides of an A/B pair and says what differs, most telling first. Plain
data: this package imports neither tilegate.report nor tilegate.run.
"""
