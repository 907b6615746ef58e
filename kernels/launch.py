"""What one kernel launch is: tilegate's declaration of it (tilegate.launch), which the
variants' `plan` returns and the AOT fingerprint compiles."""

from tilegate.launch import Arg, DescArg, KernelLaunch, ScalarArg, TensorArg

__all__ = ["Arg", "DescArg", "KernelLaunch", "ScalarArg", "TensorArg"]
