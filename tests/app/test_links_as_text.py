"""Links in quoted document text read as their text (display only; the stored chunk text stays raw Markdown)."""

from __future__ import annotations

from ui.agent.agent_text import readable_answer
from ui.safe_text import links_as_text, safe_markdown

QUOTE = """See [git dependencies](../../concepts/projects/dependencies.md#git) and the [`PAT`][PAT] page, or [token].
Types such as list[int] and x[0][1] stay, and so do [unknown] and [a][] without a definition.
![diagram](img/deps.png) is an image, `[code](span)` is code.

[PAT]: ../../reference/pat.md
[token]: https://example.com/token "Tokens"

```python
matrix[0][1] = value
[ref]: kept.md
```
"""


def test_links_read_as_their_text_and_definitions_go():
    shown = links_as_text(QUOTE)
    assert shown.startswith("See git dependencies and the `PAT` page, or token.\n")
    assert "list[int] and x[0][1] stay, and so do [unknown] and [a][] without" in shown
    assert "![diagram](img/deps.png)" in shown and "`[code](span)`" in shown  # images and code untouched
    assert "[PAT]:" not in shown and "[token]:" not in shown and "example.com" not in shown
    assert "matrix[0][1] = value\n[ref]: kept.md\n```" in shown  # code fences are left as written
    assert "\n\n\n" not in shown


def test_inline_links_can_be_left_to_safe_markdown():
    shown = links_as_text("A [site](https://example.com/x) and [ref][R].\n\n[R]: https://example.com/r\n", inline=False)
    assert shown.rstrip() == "A [site](https://example.com/x) and ref."
    assert "[site ↗ example.com](<https://example.com/x>)" in safe_markdown(shown)


def test_relative_links_in_answers_show_only_their_text():
    shown = safe_markdown("Use [git dependencies](../../concepts/projects/dependencies.md#git).")
    assert shown == "Use git dependencies."
    assert "javascript" in safe_markdown("[x](javascript:alert(1))")  # other schemes stay visible and inert


def test_quoted_answer_reads_links_as_text_and_keeps_citations():
    answer = ("To add it, see [git dependencies](../../concepts/projects/dependencies.md#git) with a [PAT][PAT] "
              "[0123456789abcdef].\n\n[PAT]: ../pat.md")
    shown = readable_answer(answer, None)
    assert "dependencies.md" not in shown and "[PAT]" not in shown and "pat.md" not in shown
    assert "git dependencies with a PAT" in shown
    assert "0123456789abcdef" in shown  # a chunk reference is not a link to drop
