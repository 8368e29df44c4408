"""The value every embedder returns: a float32 matrix, one unit vector a row.

Its own module so that an embedder (`remem.embed.minilm.embedder`) and the door that
picks one (`remem.embed.base.default_embedder`) need not import each other.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]
