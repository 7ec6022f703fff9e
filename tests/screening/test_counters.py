"""The per-language counters, one example per framework and marker of the design's table
(section 8): what each finds, and that a commented-out marker is not counted."""

from __future__ import annotations

import pytest

from pipeline.core.screening import Language, count_assertions, count_items, find_skips, find_todos

PYTHON = """\
import pytest, unittest

def test_add():
    assert 1 + 1 == 2

async def test_fetch():
    with pytest.raises(ValueError):
        parse("x")

class TestCalc(unittest.TestCase):
    def test_div(self):
        self.assertEqual(4 / 2, 2)
    # def test_gone(self):
    #     assert False

def helper():
    assert True  # counted: an assertion outside a test is still one
"""

JAVASCRIPT = """\
describe('calc', () => {
  it('adds', () => { expect(add(1, 1)).toBe(2); });
  test("divides", () => { assert.equal(div(4, 2), 2); });
  it(`multiplies ${x}`, () => { assert(mul(2, 2) === 4); });
  // it('commented', () => { expect(1).toBe(1); });
  it('chains', () => { result.should.equal(3); });
  const ok = /re/.test(s);
});
"""

GO = """\
package calc

func TestAdd(t *testing.T) {
	if Add(1, 1) != 2 {
		t.Errorf("got %d", Add(1, 1))
	}
	require.Equal(t, 2, Add(1, 1))
}

func FuzzAdd(f *testing.F) { f.Fail() }

func ExampleAdd() {}

func helper() { err.Error() }
"""

RUST = """\
#[cfg(test)]
mod tests {
    #[test]
    fn adds() {
        assert_eq!(add(1, 1), 2);
    }

    #[tokio::test]
    #[should_panic]
    async fn fetches() { assert!(fetch().await.is_ok()); }

    #[test] fn divides() { assert_ne!(div(4, 2), 3); }
}
"""

JVM = """\
class CalcTest {
    @Test
    void adds() {
        assertEquals(2, add(1, 1));
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2})
    public void divides(int n) throws Exception {
        assertThat(div(n, 1)).isEqualTo(n);
        verify(mock).called();
    }

    @RepeatedTest(3) void repeats() { assertTrue(ok()); }

    @Test
    fun `adds in kotlin`() { assertEquals(2, add(1, 1)) }
}
"""


@pytest.mark.parametrize(
    ("language", "text", "names", "assertions"),
    [
        (Language.PYTHON, PYTHON, ["test_add", "test_fetch", "test_div"], 4),
        (Language.JAVASCRIPT, JAVASCRIPT, ["adds", "divides", "multiplies ${x}", "chains"], 4),
        (Language.GO, GO, ["TestAdd", "FuzzAdd", "ExampleAdd"], 3),
        (Language.RUST, RUST, ["adds", "fetches", "divides"], 3),
        (Language.JVM, JVM, ["adds", "divides", "repeats", "`adds in kotlin`"], 5),
    ],
    ids=lambda v: v if isinstance(v, Language) else "",
)
def test_items_and_assertions_per_language(
    language: Language, text: str, names: list[str], assertions: int
) -> None:
    """Each language's test declarations are found by name, and its assertions counted,
    with commented-out code and look-alikes (``/re/.test(``, ``err.Error()``) left out."""
    assert [item.name for item in count_items(language, text)] == names
    assert count_assertions(language, text) == assertions


def test_items_carry_their_line() -> None:
    """An item's line is its declaration's (the ``fn`` line, not the attribute's)."""
    assert [i.line for i in count_items(Language.RUST, RUST)] == [4, 10, 12]
    assert [i.line for i in count_items(Language.PYTHON, PYTHON)] == [3, 6, 11]


SKIPS = [
    (Language.PYTHON, "@pytest.mark.skip(reason='flaky')"),
    (Language.PYTHON, "@pytest.mark.skipif(sys.platform == 'win32', reason='x')"),
    (Language.PYTHON, "@pytest.mark.xfail"),
    (Language.PYTHON, "pytestmark = pytest.mark.skip"),
    (Language.PYTHON, "    pytest.skip('later')"),
    (Language.PYTHON, "    pytest.xfail('later')"),
    (Language.PYTHON, "np = pytest.importorskip('numpy')"),
    (Language.PYTHON, "@unittest.skip('later')"),
    (Language.PYTHON, "@unittest.skipIf(True, 'x')"),
    (Language.PYTHON, "@unittest.skipUnless(False, 'x')"),
    (Language.PYTHON, "@unittest.expectedFailure"),
    (Language.PYTHON, "        self.skipTest('later')"),
    (Language.PYTHON, "    raise unittest.SkipTest('later')"),
    (Language.JAVASCRIPT, "it.skip('adds', () => {});"),
    (Language.JAVASCRIPT, "describe.skip('calc', () => {});"),
    (Language.JAVASCRIPT, "it.only('adds', () => {});"),
    (Language.JAVASCRIPT, "test.todo('adds');"),
    (Language.JAVASCRIPT, "xit('adds', () => {});"),
    (Language.JAVASCRIPT, "xdescribe('calc', () => {});"),
    (Language.JAVASCRIPT, "xtest('adds', () => {});"),
    (Language.JAVASCRIPT, "fit('adds', () => {});"),
    (Language.JAVASCRIPT, "fdescribe('calc', () => {});"),
    (Language.JAVASCRIPT, "it.skipIf(isWindows)('adds', () => {});"),
    (Language.JAVASCRIPT, "test.runIf(isLinux)('adds', () => {});"),
    (Language.JAVASCRIPT, "it.fails('adds', () => {});"),
    (Language.JAVASCRIPT, "  this.skip();"),
    (Language.GO, '\tt.Skip("later")'),
    (Language.GO, '\tt.Skipf("later %d", 1)'),
    (Language.GO, "\tt.SkipNow()"),
    (Language.RUST, "#[ignore]"),
    (Language.RUST, '#[ignore = "slow"]'),
    (Language.JVM, "@Disabled"),
    (Language.JVM, "@DisabledOnOs(OS.WINDOWS)"),
    (Language.JVM, "@Ignore"),
    (Language.JVM, '@EnabledIfEnvironmentVariable(named = "CI", matches = "true")'),
    (Language.JVM, "Assumptions.assumeTrue(false);"),
    (Language.JVM, "assumeTrue(false)"),
    (Language.JVM, "@Test(enabled = false)"),
]


@pytest.mark.parametrize(("language", "line"), SKIPS, ids=[line for _, line in SKIPS])
def test_every_listed_skip_and_focus_marker_is_found(language: Language, line: str) -> None:
    """Each skip or focus syntax of the design's table is one marker on its line."""
    text = f"first line\n{line}\n"
    markers = find_skips(language, text)
    assert [(m.line, m.text) for m in markers] == [(2, line.strip())]


@pytest.mark.parametrize(
    ("language", "line"),
    [
        (Language.PYTHON, "# @pytest.mark.skip"),
        (Language.PYTHON, "x = 'not a # @pytest.mark.skip'  # but the string holds it"),
        (Language.JAVASCRIPT, "// it.skip('adds')"),
        (Language.JAVASCRIPT, "const fit = fitness(x);"),
        (Language.GO, "// t.Skip()"),
        (Language.RUST, "// #[ignore]"),
        (Language.JVM, "// @Disabled"),
        (Language.JVM, "@TestInstance(Lifecycle.PER_CLASS)"),
    ],
)
def test_commented_out_and_look_alike_markers_are_not_skips(language: Language, line: str) -> None:
    """A marker in a comment is not in force; a word that only looks like one is not one.
    (A marker inside a string on a code line still counts: quotes are followed, so this
    one is the string's.)"""
    found = find_skips(language, line)
    expected = 1 if "but the string" in line else 0
    assert sum(m.count for m in found) == expected


def test_todos_are_words_in_comments_and_code() -> None:
    """``TODO`` and ``FIXME`` count as words, in comments too; ``TODOS`` or ``todo`` do not."""
    text = "x = 1  # TODO handle overflow\n# FIXME: later\nTODOS = []\ntodo = 2\n"
    assert [(m.line, m.text) for m in find_todos(text, ("TODO", "FIXME"))] == [
        (1, "x = 1  # TODO handle overflow"),
        (2, "# FIXME: later"),
    ]
    assert find_todos(text, ()) == ()
