"""KernelFoundry: evolutionary quality-diversity search for fast Triton kernels."""

from pathlib import Path

__version__ = "0.1.0"

#: Repository root when running from a checkout (holds hardware/, prompts/, experiments/).
PACKAGE_DIR = Path(__file__).resolve().parent
REPO_DIR = PACKAGE_DIR.parent
