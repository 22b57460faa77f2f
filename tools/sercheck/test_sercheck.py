#!/usr/bin/env python3
"""Unit tests of sercheck: known serializable and non-serializable histories."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sercheck  # noqa: E402


class SercheckTest(unittest.TestCase):
    def test_serial_history_is_clean(self):
        txns = [("a", [], [("x", 0)]), ("b", [("x", 1)], [("x", 1)]), ("c", [("x", 2)], [])]
        self.assertEqual(sercheck.check(txns), [])

    def test_read_only_of_initial_versions_is_clean(self):
        txns = [("r", [("x", 0), ("y", 0)], []), ("w", [], [("y", 0)])]
        self.assertEqual(sercheck.check(txns), [])

    def test_write_skew_is_a_cycle(self):
        # Both read x and y at version 0; a replaces x, b replaces y: a -rw-> b -rw-> a.
        txns = [("a", [("x", 0), ("y", 0)], [("x", 0)]), ("b", [("x", 0), ("y", 0)], [("y", 0)])]
        problems = sercheck.check(txns)
        self.assertEqual(len(problems), 1)
        self.assertIn("dependency cycle", problems[0])

    def test_lost_update_is_reported(self):
        txns = [("a", [("x", 0)], [("x", 0)]), ("b", [("x", 0)], [("x", 0)])]
        problems = sercheck.check(txns)
        self.assertTrue(any("lost update" in p for p in problems))

    def test_three_transaction_cycle(self):
        # a -wr(x)-> b -wr(y)-> c -rw(z)-> a: c reads z at 0, which a replaced.
        txns = [("a", [], [("x", 0), ("z", 0)]), ("b", [("x", 1)], [("y", 0)]),
                ("c", [("y", 1), ("z", 0)], [])]
        problems = sercheck.check(txns)
        self.assertTrue(any("dependency cycle" in p for p in problems))

    def test_main_exit_codes(self):
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            f.write('{"id": "a", "reads": [["x", 0]], "writes": [["x", 0]]}\n')
            path = f.name
        self.assertEqual(sercheck.main(["sercheck", path]), 0)
        with open(path, "w", encoding="utf-8") as f:
            f.write("not json\n")
        self.assertEqual(sercheck.main(["sercheck", path]), 2)
        os.unlink(path)


if __name__ == "__main__":
    unittest.main()
