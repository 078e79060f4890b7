"""ajpegli (Google's jpegli): ``imdecode(data, mode="RGB")`` from memory, ``imread(path)`` from
disk (the file is read in the native extension).

jpegli's IDCT is not libjpeg-turbo's: its pixels differ from the reference by 0.65-0.90 mean
abs error on the test photos (JPEG tolerance 2.0). A truncated JPEG comes back with its missing
rows filled (jpegli prints "Incomplete scan detected" and returns); verification flags it, so
such a file is never timed. CMYK JPEGs are an error ("Unsupported color transform").
"""

from __future__ import annotations

import ajpegli
import numpy as np

from imgbench.readers.base import BytesReader


class AjpegliReader(BytesReader):
    def decode(self, data: bytes) -> np.ndarray:
        return ajpegli.imdecode(data, mode="RGB")

    def read(self, path: str) -> np.ndarray:
        return ajpegli.imread(path, mode="RGB")
