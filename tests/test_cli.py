"""The `tfliquid` command as a whole: its exit statuses, its options' mapping onto the Python functions it wraps,
--version and --help, and a stdout closed early. Each command's own behaviour is tested beside its function's."""

import itertools
import os
import re
import subprocess
import sys

import pytest

import tfliquid
from tfliquid import cli
from tfliquid.samples.photos import write_image_folder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def crops(tmp_path_factory):
    """An image folder of 2 JPEG crops per class of every shipped photo, each 48x48."""
    root = tmp_path_factory.mktemp("cli") / "crops"
    write_image_folder(str(root), 2, size=48, seed=3)
    return root


@pytest.fixture(scope="module")
def pcr_crops(crops, tmp_path_factory):
    dst = tmp_path_factory.mktemp("cli") / "pcr"
    tfliquid.pcr.convert(str(crops), str(dst), images_per_record=4, progress=False)
    return dst


def _files(root) -> dict[str, bytes]:
    """Every file under root by relative path (the lock and state files aside), with its bytes."""
    files = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, root)] = f.read()
    return files


def test_convert_l3_to_a_bare_file_name(crops, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = os.path.join(crops, sorted(os.listdir(crops))[0], "0000.jpg")
    report = tfliquid.l3.convert(source, "scan.l3", progress=False)
    assert report.converted == 1 and (tmp_path / "scan.l3").is_file()
    assert cli.main(["convert", "l3", source, "again.l3", "--quiet"]) == 0
    assert (tmp_path / "again.l3").read_bytes() == (tmp_path / "scan.l3").read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["again.l3", "scan.l3"]  # no lock or temporary file left behind


def _refusals(crops, pcr_crops, tmp_path):
    """(command line, what the one line on stderr says) of operands refused before any work."""
    missing = str(tmp_path / "missing")
    empty = tmp_path / "empty"
    empty.mkdir()
    return [
        (["convert", "pcr", missing, str(tmp_path / "p")], f"{missing}: no such file or folder"),
        (["convert", "l3", missing, str(tmp_path / "l")], f"{missing}: no such file or folder"),
        (["convert", "liquid", missing, str(tmp_path / "q"), "--formats", "png"], f"{missing}: no such file"),
        (["convert", "pcr", str(crops), str(crops / "inside")], "is inside the source folder"),
        (["convert", "l3", str(empty), str(tmp_path / "l")], "no images"),
        (
            ["convert", "pcr", str(crops), str(pcr_crops), "--images-per-record", "3"],
            "holds another conversion (images per record",
        ),
        (["inspect", missing], f"{missing}: no such file or folder"),
        (["inspect", str(empty)], "is neither a PCR dataset"),
        (["analyze", str(tmp_path / "nothere.py")], "nothere.py: no such file"),
        (["profile", "liquid", missing, "--quiet"], f"{missing}: no such file or folder"),
    ]


def test_operands_refused_before_working_are_usage_errors(crops, pcr_crops, tmp_path, capsys):
    wrong = []
    before = _files(pcr_crops)
    for argv, message in _refusals(crops, pcr_crops, tmp_path):
        status = cli.main([*argv, "--quiet"] if argv[0] == "convert" else argv)
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        if status != cli.EXIT_USAGE or len(lines) != 1 or not lines[0].startswith("tfliquid: error: "):
            wrong.append((argv, status, err))
        elif message not in lines[0] or "not a PCR dataset" in lines[0]:
            wrong.append((argv, lines[0], f"lacks {message!r}"))
    assert wrong == []
    assert _files(pcr_crops) == before  # the refused conversion wrote nothing
    assert not (crops / "inside").exists()


def _options(parser) -> list[tuple[tuple[str, ...], object]]:
    """(command words, its parser) of every command below `parser`."""
    commands = []
    for action in parser._actions:
        if action.choices and isinstance(action.choices, dict):
            for word, sub in action.choices.items():
                found = _options(sub)
                commands += [((word, *words), p) for words, p in found] if found else [((word,), sub)]
    return commands


def test_every_commands_options_are_its_functions_parameters():
    """What docs/cli.md promises: each command calls the functions its table row names first, every option being
    the parameter of the same name (the options each command handles itself aside)."""
    table = {}
    with open(os.path.join(ROOT, "docs", "cli.md")) as f:
        for line in f:
            row = re.match(r"\| `tfliquid ([^`]+)` \|", line)
            if row:
                command = " ".join(itertools.takewhile(lambda w: re.fullmatch("[a-z0-9]+", w), row.group(1).split()))
                table[command] = re.findall(r"`(tfliquid\.[a-z0-9_.]+)`", line.rsplit("|", 2)[-2])
    wrong = []
    for words, parser in _options(cli.build_parser()):
        command, api = " ".join(words), list(parser.get_default("api"))
        named = table.pop(command, [])
        if named[: len(api)] != api:
            wrong.append((command, "docs/cli.md names", named, "the command calls", api))
        names = set().union(*(cli.parameter_names(cli.resolve(name)) for name in api))
        names |= set(parser.get_default("not_parameters") or ()) | {"help", "verbose", "quiet", "fail_fast"}
        wrong += [(command, action.dest) for action in parser._actions if action.dest not in names]
    assert wrong == [] and table == {}


@pytest.mark.parametrize("command", [["convert", "pcr"], ["convert", "liquid"], ["profile", "liquid"]])
def test_workers_is_an_option_of_every_conversion(command):
    args = cli.build_parser().parse_args(
        [*command, "src", *(["dst"] if command[0] == "convert" else []), "--workers", "1"]
    )
    assert args.workers == 1


@pytest.mark.parametrize("kind", ["pcr", pytest.param("liquid", marks=pytest.mark.slow)])
def test_workers_converts_the_same_bytes_as_the_default(crops, tmp_path, kind):
    options = dict(images_per_record=4, progress=False)
    if kind == "liquid":
        options.update(formats="png,raw", ratio="1:1")
    convert = getattr(tfliquid, kind).convert
    assert convert(str(crops), str(tmp_path / "default"), **options).converted == 20
    for workers in (1, 3):
        assert convert(str(crops), str(tmp_path / f"{workers}"), workers=workers, **options).converted == 20
        assert _files(tmp_path / f"{workers}") == _files(tmp_path / "default")
    with pytest.raises(tfliquid.ArgumentError, match="workers is the local runner's"):
        convert(str(crops), str(tmp_path / "beam"), workers=2, runner="beam", **options)


def test_cli_workers_is_the_functions_workers(crops, tmp_path, capsys):
    tfliquid.pcr.convert(str(crops), str(tmp_path / "python"), images_per_record=4, workers=2, progress=False)
    argv = ["convert", "pcr", str(crops), str(tmp_path / "cli"), "--images-per-record", "4", "--workers", "2"]
    assert cli.main([*argv, "--quiet"]) == 0
    assert _files(tmp_path / "cli") == _files(tmp_path / "python")
    assert cli.main(["convert", "pcr", str(crops), str(tmp_path / "x"), "--workers", "0", "--quiet"]) == 2
    assert "workers must be an int >= 1, got 0" in capsys.readouterr().err


def test_inspect_is_a_python_function_that_prints_as_the_command(pcr_crops, liquid_photos, capsys):
    for path, kind in ((str(pcr_crops), tfliquid.pcr.PCRInspection), (liquid_photos, tfliquid.liquid.LiquidInspection)):
        inspection = tfliquid.inspect(path)
        assert isinstance(inspection, kind)
        assert cli.main(["inspect", path]) == 0
        assert capsys.readouterr().out == f"{inspection}\n"
    pcr = tfliquid.pcr.inspect(str(pcr_crops))
    assert pcr.images == 20 and pcr.records == 5 and pcr.classes == 10 and pcr.scan_groups[-1].percent_of_full == 100
    liquid = tfliquid.liquid.inspect(liquid_photos)
    assert liquid.images == 16 and [f.name for f in liquid.formats] == ["png", "raw"]
    assert sum(f.images for f in liquid.formats) == liquid.images and liquid.ratio == "1:1"


@pytest.mark.parametrize(
    "options",
    [
        ["--items", "300", "--capacity", "0.25", "--epochs", "3", "--policies", "lru,minio"],
        ["--items", "300", "--capacity", "40", "--epochs", "3", "--workers", "3", "--prefetch-bandwidth", "0.5"],
    ],
)
def test_simulate_cache_is_a_python_function_that_prints_as_the_command(options, capsys):
    assert cli.main(["simulate", "cache", *options, "--quiet"]) == 0
    printed = capsys.readouterr().out
    given = dict(zip(options[::2], options[1::2]))
    simulation = tfliquid.cache.simulate_policies(
        num_items=300,
        capacity=float(given["--capacity"]) if "." in given["--capacity"] else int(given["--capacity"]),
        epochs=3,
        policies=given.get("--policies"),
        num_workers=int(given["--workers"]) if "--workers" in given else None,
        prefetch_bandwidth=float(given.get("--prefetch-bandwidth", 0)),
        progress=False,
    )
    assert printed == f"{simulation}\n"


def test_version_needs_no_tensorflow():
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.modules['tensorflow'] = None  # importing it fails\n"
            "from tfliquid.cli import main; sys.exit(main(['--version']))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, f"tfliquid {tfliquid.__version__}\n", "")


def _help(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exited:
        cli.main([*argv, "--help"])
    assert exited.value.code == 0
    return " ".join(capsys.readouterr().out.split())  # argparse wraps lines at the terminal's width


def test_every_option_has_help_and_every_command_a_description(capsys):
    inspect_help = _help(["inspect"], capsys)
    assert "Print what the dataset at PATH holds" in inspect_help
    assert "--format {auto,folder,tfrecord} what SRC is" in _help(["convert", "pcr"], capsys)
    assert (
        "--l3-profile {default,paper} encoder settings of l3 items, as convert l3's --profile (default: default)"
        in _help(["convert", "liquid"], capsys)
    )
    undocumented = []
    for words, parser in _options(cli.build_parser()):
        if not parser.description:
            undocumented.append(words)
        undocumented += [(words, a.dest) for a in parser._actions if not a.help]
    assert undocumented == []


@pytest.mark.slow
@pytest.mark.parametrize("command", ["inspect", "simulate"])
def test_a_stdout_closed_early_ends_quietly_with_status_141(command, pcr_crops):
    """`tfliquid inspect DATASET | head -1`: head exits after a line, and the command's next write finds the pipe
    closed. Here the reading end is closed before the command writes anything."""
    argv = ["inspect", str(pcr_crops)] if command == "inspect" else ["simulate", "cache", "--items", "50", "--quiet"]
    read_end, write_end = os.pipe()
    process = subprocess.Popen(
        [sys.executable, "-m", "tfliquid", *argv], stdout=write_end, stderr=subprocess.PIPE, text=True, cwd=ROOT
    )
    os.close(write_end)
    os.close(read_end)
    _, err = process.communicate(timeout=120)
    assert (process.returncode, err) == (cli.EXIT_BROKEN_PIPE, "")
