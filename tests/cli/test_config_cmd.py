import json

from rag_core.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_import_list_show_export_delete(tmp_path, capsys):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"name": "fast", "retrieval": {"initial_k": 4}}))
    assert run(capsys, "config", "import", str(path)) == (0, '{"imported": "fast"}\n', "")
    assert run(capsys, "config", "list")[1] == '["fast"]\n'
    code, out, _ = run(capsys, "config", "export", "fast")
    assert code == 0 and json.loads(out)["retrieval"]["initial_k"] == 4
    assert json.loads(run(capsys, "config", "show", "fast")[1])["name"] == "fast"
    assert run(capsys, "config", "delete", "fast")[0] == 0
    assert run(capsys, "config", "list")[1] == "[]\n"


def test_invalid_import_is_one_line_on_stderr_with_exit_2(tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"retrieval": {"initial_k": 0}}))
    code, out, err = run(capsys, "config", "import", str(path))
    assert (code, out) == (2, "")
    assert err == "error: bad.json: retrieval.initial_k: must be ≥ 1\n"
    code, _, err = run(capsys, "config", "export", "ghost")
    assert code == 2 and "no saved configuration named 'ghost'" in err
