"""The few SageMaker SDK helpers smq reuses, from whichever SDK major is installed.

Following a job prints what the SDK prints: its per-host log colours, its merge of log streams by
timestamp and its secondary-status lines. SDK v3 moved these helpers, unchanged, from
`sagemaker.logs` and `sagemaker.utils` into `sagemaker.core`; importing them here, once, keeps the
rest of the client free of version checks. Importing this module needs one SDK major installed.
"""

from __future__ import annotations

try:  # SageMaker Python SDK v3
    from sagemaker.core.common_utils import secondary_training_status_changed, secondary_training_status_message
    from sagemaker.core.logs import ColorWrap, Position, multi_stream_iter
except ModuleNotFoundError:  # v2
    from sagemaker.logs import ColorWrap, Position, multi_stream_iter
    from sagemaker.utils import (
        secondary_training_status_changed,
        secondary_training_status_message,
    )

__all__ = [
    "ColorWrap",
    "Position",
    "multi_stream_iter",
    "secondary_training_status_changed",
    "secondary_training_status_message",
]
