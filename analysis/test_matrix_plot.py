"""analysis.matrix_plot on matrix CSVs made for the test: the cells read
by kind, the picture written, and damaged files refused with one line
(other columns, an unknown kind, a word for a number, no traffic, no file)."""
import os
import subprocess
import sys
import tempfile
import unittest

from analysis import matrix_plot

HEADER = "rank,peer,kind,messages_sent,bytes_sent,messages_received,bytes_received\n"
CSV = HEADER + """0,1,user,5,80,0,0
1,0,user,0,0,5,80
0,2,internal,10,640,0,0
2,0,internal,0,0,10,640
1,2,one-sided,3,20,2,16
"""


class MatrixPlot(unittest.TestCase):
    def write(self, folder, text):
        path = os.path.join(folder, "m.csv")
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_cells_by_kind_and_the_picture(self):
        with tempfile.TemporaryDirectory() as folder:
            ranks, cells = matrix_plot.read_matrix(self.write(folder, CSV))
            self.assertEqual(ranks, 3)
            self.assertEqual(cells, {"user": {(0, 1): (80, 5), (1, 0): (0, 0)},
                                     "internal": {(0, 2): (640, 10), (2, 0): (0, 0)},
                                     "one-sided": {(1, 2): (20, 3)}})
            out = os.path.join(folder, "m.png")
            matrix_plot.draw(ranks, cells, out)
            self.assertGreater(os.path.getsize(out), 10000)

    def refused(self, text, words):
        with tempfile.TemporaryDirectory() as folder:
            path = self.write(folder, text) if text is not None else os.path.join(folder, "none.csv")
            result = subprocess.run([sys.executable, "-m", "analysis.matrix_plot", path, os.path.join(folder, "x.png")],
                                    capture_output=True, text=True)
            self.assertNotEqual(result.returncode, 0)
            self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
            self.assertIn(words, result.stderr)
            self.assertFalse(os.path.exists(os.path.join(folder, "x.png")))

    def test_damaged_files_are_refused_in_one_line(self):
        self.refused("rank,counter,value\n0,OMPI_SPC_SEND,1\n", "not a matrix CSV")
        self.refused(HEADER + "0,1,other,1,1,0,0\n", "unknown kind 'other'")
        self.refused(HEADER + "0,1,user,one,1,0,0\n", "m.csv:2: not a number")
        self.refused(HEADER, "no traffic in it")
        self.refused(None, "cannot read")


if __name__ == "__main__":
    unittest.main()
