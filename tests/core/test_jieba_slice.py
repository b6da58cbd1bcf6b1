"""rjieba's cut from the slices of jieba's dictionary a text needs (`core.jieba_slice`): the
same words as rjieba's whole dictionary gives, without loading it."""

from __future__ import annotations

import functools
import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from vaultmem.core import jieba_slice

PROSE = (
    "怎么在多个设备之间同步笔记",
    "如何使用属性和标签整理知识库",
    "我想把文件夹里的图片插入到笔记中",
    "手机上的黑曜石可以离线编辑吗",
    "他们在北京大学研究自然语言处理和机器翻译的方法",
    "这个插件的设置页面在哪里打开",
    "南京市长江大桥",  # a classic ambiguity: 南京市|长江大桥, not 南京|市长|江大桥
    "结婚的和尚未结婚的",
    "工信处女干事每月经过下属科室都要亲口交代二十四口交换机等技术性器件的安装工作",
    "萨尔瓦多·达利是西班牙超现实主义画家",  # a name jieba does not know: its HMM
    "的的的的的",
    "龘",  # a character in no word of the dictionary
)


def _full() -> object:
    """rjieba's own cut, with its whole dictionary (a dependency: never skipped)."""
    import rjieba

    return rjieba.tokenize


@functools.cache
def _dictionary() -> dict[str, int]:
    """Every word of the word list with its frequency (parsed once for the module's tests)."""
    return dict(jieba_slice._Slices(jieba_slice.DATA_PATH.read_bytes()).words())


def _words(rng: random.Random) -> list[str]:
    """Words of the dictionary itself, a sample of those that start with common characters."""
    common = set("的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主")
    return rng.sample(sorted(w for w in _dictionary() if w[0] in common), 1500)


def test_the_word_list_is_jieba_s_dictionary() -> None:
    """349,045 distinct words (jieba 0.42.1's `dict.txt`, the one jieba-rs builds in), whose
    frequencies sum to the total the filler completes."""
    slices = jieba_slice._Slices(jieba_slice.DATA_PATH.read_bytes())
    words = _dictionary()
    assert len(words) == 349_045
    assert sum(words.values()) == slices.total == 60_101_964
    assert words["属性"] > 0 and words["的"] > words["属性"]


@pytest.mark.parametrize("text", PROSE)
def test_prose_is_cut_as_the_whole_dictionary_cuts_it(text: str) -> None:
    assert jieba_slice.tokenize(text) == _full()(text)  # type: ignore[operator]


def test_random_runs_of_dictionary_words_and_characters_are_cut_the_same() -> None:
    """Runs made of dictionary words and their characters, glued at random (so that words
    overlap across the joins), and runs of single characters (the HMM's part)."""
    full = _full()
    rng = random.Random(20261207)
    words = _words(rng)
    chars = sorted({c for w in words for c in w})
    for _ in range(1500):
        if rng.random() < 0.7:
            run = "".join(rng.choice(words) for _ in range(rng.randint(1, 8)))
        else:
            run = "".join(rng.choice(chars) for _ in range(rng.randint(1, 30)))
        assert jieba_slice.tokenize(run) == full(run), run  # type: ignore[operator]


def _child(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_a_short_text_is_cut_without_loading_the_dictionary_and_rjieba_loads_after() -> None:
    """The package `rjieba` (whose import builds the whole dictionary) stays out of a process
    that cuts a few sentences; importing it afterwards reuses the engine already loaded."""
    code = (
        "import sys\n"
        "from vaultmem.core import segment\n"
        "a = segment.words('怎么在多个设备之间同步笔记', 'zh')\n"
        "print('rjieba' in sys.modules)\n"
        "import rjieba\n"
        "b = [(s, e) for _, s, e in rjieba.tokenize('怎么在多个设备之间同步笔记')]\n"
        "print(a == b)\n"
    )
    assert _child(code).splitlines() == ["False", "True"]


def test_past_its_budget_a_process_loads_the_whole_dictionary() -> None:
    code = (
        "import sys\n"
        "from vaultmem.core import segment\n"
        "segment._slice_left = 20\n"
        "a = segment.words('怎么在多个设备之间同步笔记', 'zh')\n"
        "print('rjieba' in sys.modules)\n"
        "b = segment.words('如何使用属性和标签整理知识库', 'zh')\n"
        "print('rjieba' in sys.modules, b[:2])\n"
    )
    assert _child(code).splitlines() == ["False", "True [(0, 2), (2, 4)]"]


def test_a_damaged_word_list_falls_back_to_the_whole_dictionary(tmp_path: object) -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from vaultmem.core import jieba_slice, segment\n"
        f"bad = Path({str(tmp_path)!r}) / 'words.bin'\n"
        "bad.write_bytes(b'not a word list')\n"
        "jieba_slice.DATA_PATH = bad\n"
        "print(segment.words('同步笔记', 'zh'), 'rjieba' in sys.modules)\n"
    )
    assert _child(code) == "[(0, 2), (2, 4)] True"


def test_threads_cutting_at_once_get_the_whole_dictionary_s_words() -> None:
    """The MCP server cuts queries and snippets in threads: each text still gets the words
    the whole dictionary gives (one cutter, one text at a time)."""
    full = _full()
    rng = random.Random(7)
    words = _words(rng)
    runs = ["".join(rng.choice(words) for _ in range(rng.randint(2, 12))) for _ in range(400)]
    expected = [full(run) for run in runs]  # type: ignore[operator]
    jieba_slice._cutter = None  # a fresh cutter: every thread adds words as it goes
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads take turns between any two steps
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            got = list(pool.map(jieba_slice.tokenize, runs))
    finally:
        sys.setswitchinterval(interval)
    assert got == expected


def test_an_rjieba_release_not_compared_with_the_word_list_cuts_with_its_own() -> None:
    """Another rjieba may build in another dictionary: its cuts are then rjieba's own, never
    the slices' (which would differ from the notes a build cut with it)."""
    code = (
        "import sys\n"
        "from vaultmem.core import jieba_slice, segment\n"
        "jieba_slice.VERIFIED_RJIEBA = ('0.0.0',)\n"
        "print(segment.words('同步笔记', 'zh'), 'rjieba' in sys.modules)\n"
    )
    assert _child(code) == "[(0, 2), (2, 4)] True"
