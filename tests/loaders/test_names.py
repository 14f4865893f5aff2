"""Document names: uploads keep a clean base name; folder ingests keep the path inside the folder."""
def test_keep_folders_keeps_a_clean_relative_path():
    from rag_core.loaders.detect import safe_name

    assert safe_name("tutorial/index.md", keep_folders=True) == "tutorial/index.md"
    assert safe_name("../../etc/passwd.md", keep_folders=True) == "etc/passwd.md"
    assert safe_name("/abs\\win/x\x07.md", keep_folders=True) == "abs/win/x.md"
    assert safe_name("tutorial/index.md") == "index.md"
