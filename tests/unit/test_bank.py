"""The adversarial test bank (sparring.rewards.bank): files, merge, per-problem view, lineage
(fast)."""

import json

from sparring.rewards import bank

R1 = {"problem_id": "p1", "test": "assert f(2) == 4", "round": 1, "breaks": 1}
R2 = {"problem_id": "p2", "test": "assert g('a') == 'A'", "round": 2, "breaks": 0}
NOT_A_TEST = {"a": 1}  # a row the phases carry but no test: evaluation and the answerer skip it


def _folder(tmp_path):
    folder = tmp_path / "bank1"
    folder.mkdir()
    lines = [json.dumps(R1), "", json.dumps(NOT_A_TEST), json.dumps(R2)]
    (folder / bank.BANK_FILE).write_text("\n".join(lines) + "\n")
    return folder


def test_read_a_folder_and_a_file(tmp_path):
    folder = _folder(tmp_path)
    assert bank.bank_file(folder) == str(folder / "bank.jsonl")
    assert bank.bank_file(folder / bank.BANK_FILE) == str(folder / "bank.jsonl")
    # every row as written (the blank line skipped), and only the tests
    assert bank.read_rows(folder) == bank.read_rows(folder / bank.BANK_FILE) == [R1, NOT_A_TEST, R2]
    assert bank.read_bank(folder) == bank.read_bank(str(folder / bank.BANK_FILE)) == [R1, R2]
    assert (
        bank.read_bank(tmp_path / "missing.jsonl")
        == bank.read_bank(None)
        == bank.read_rows("")
        == []
    )
    assert bank.beside_bank(folder, "zone.json") == folder / "zone.json"
    assert bank.beside_bank(folder / bank.BANK_FILE, "zone.json") == folder / "zone.json"


def test_write_and_copy(tmp_path):
    out = tmp_path / "new" / bank.BANK_FILE
    bank.write_rows(out, [R1, R2])
    assert out.read_text() == json.dumps(R1) + "\n" + json.dumps(R2) + "\n"
    assert [p.name for p in out.parent.iterdir()] == [bank.BANK_FILE]  # no temp file left
    odd = tmp_path / "odd.jsonl"
    odd.write_text('{"problem_id":"p1","test":"assert f(0) == 0"}')  # compact, no newline
    bank.copy_bank(odd, tmp_path / "copy.jsonl")
    assert (tmp_path / "copy.jsonl").read_bytes() == odd.read_bytes()  # byte for byte
    bank.copy_bank(tmp_path / "none.jsonl", tmp_path / "empty.jsonl")
    assert (tmp_path / "empty.jsonl").read_text() == ""


def test_merge_with_a_duplicate():
    baseline = {"p1": ["assert f(1) == 1"]}
    merge = bank.BankMerge([R1, NOT_A_TEST | {"problem_id": "p9", "test": "t"}], baseline, 0.9)
    # exact after normalizing: a spacing variant of the baseline test, and of the banked one
    assert merge.is_duplicate("p1", "assert f(1)==1")
    assert merge.is_duplicate("p1", "assert  f(2)  ==  4")
    # tokens {assert f ( 3 ) = 9} vs {assert f ( 1 ) =}: 5 shared of 8, 0.625 < 0.9
    assert not merge.is_duplicate("p1", "assert f(3) == 9")
    row = merge.add("p1", "assert f(3) == 9", 2, 3)
    assert row == {"problem_id": "p1", "test": "assert f(3) == 9", "round": 2, "breaks": 3}
    assert merge.is_duplicate("p1", "assert f(3)==9")  # what joined counts from then on
    assert not merge.is_duplicate("p2", "assert f(3) == 9")  # per problem
    # the bank's rows as they were (a row that is no test included), then the added one
    assert merge.rows == [R1, {"a": 1, "problem_id": "p9", "test": "t"}, row]
    assert merge.added == [row]
    # near duplicate: 0.625 reaches a similarity of 0.6
    assert bank.BankMerge([], baseline, 0.6).is_duplicate("p1", "assert f(3) == 9")


def test_per_problem_view(tmp_path):
    again = {**R1, "round": 3}  # the same test banked twice: listed once, where it first came
    extra = {"problem_id": "p1", "test": "assert f(5) == 25", "round": 3, "breaks": 2}
    rows = [R1, R2, again, extra]
    assert bank.tests_by_problem(rows) == {
        "p1": ["assert f(2) == 4", "assert f(5) == 25"],
        "p2": ["assert g('a') == 'A'"],
    }
    bank.write_rows(tmp_path / bank.BANK_FILE, [*rows, NOT_A_TEST])
    assert bank.bank_tests(tmp_path) == bank.tests_by_problem(rows)
    assert bank.bank_tests(None) == {}


def test_lineage_by_round():
    r3 = {"problem_id": "p1", "test": "assert f(5) == 25", "round": 3, "breaks": 2}
    unrounded = {"problem_id": "p1", "test": "assert f(6) == 36"}
    by_round = bank.rows_by_round([r3, R1, unrounded, R2, {**R2, "round": "2"}])
    assert list(by_round) == [1, 2, 3]
    assert by_round == {1: [R1], 2: [R2], 3: [r3]}


def test_what_trivial_code_passes_is_not_banked():
    tests = ["assert f(1) == 0", "assert f(2) == 4", "assert f(3) == 9"]
    # const_0 passes the first; an echo's result on the third is unknown (None): barred too
    assert bank.trivially_passed(tests, [[True, False, False], [False, False, None]]) == {
        "assert f(1) == 0",
        "assert f(3) == 9",
    }
    assert bank.trivially_passed(tests, [[False, False, False]]) == set()
    assert bank.trivially_passed(tests, []) == set()
