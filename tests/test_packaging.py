"""The package stands on its own: a wheel, installed into a fresh virtualenv away from the source tree, can
migrate a database and import every module; the Dockerfile and the manifests agree with it."""

from __future__ import annotations

import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def run(*command: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    result = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{command}: {result.stdout[-2000:]}{result.stderr[-2000:]}"
    return result.stdout


def test_the_wheel_installs_and_migrates_outside_the_source_tree(tmp_path: Path) -> None:
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", tmp_path / "dist", ROOT, cwd=tmp_path)
    [wheel] = (tmp_path / "dist").glob("changeops-*.whl")
    run(sys.executable, "-m", "venv", "--without-pip", tmp_path / "venv", cwd=tmp_path)
    python = tmp_path / "venv" / "bin" / "python"
    purelib = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=tmp_path).strip())
    # the dependencies come from this environment (no network), the project itself only from the wheel
    (purelib / "deps.pth").write_text("\n".join([sysconfig.get_path("purelib"), *site.getsitepackages()]) + "\n")
    run(python, "-m", "zipfile", "-e", wheel, purelib, cwd=tmp_path)
    (tmp_path / "venv" / "bin" / "bot").write_text(f"#!{python}\nimport sys\nfrom bot.cli import main\nsys.exit(main())\n")
    (tmp_path / "venv" / "bin" / "bot").chmod(0o755)
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {"PATH": "/usr/bin:/bin", "DATABASE_URL": f"sqlite:///{work / 'fresh.db'}"}
    assert run(tmp_path / "venv" / "bin" / "bot", "--version", cwd=work, env=env).startswith("changeops ")
    assert "database at" in run(tmp_path / "venv" / "bin" / "bot", "migrate", cwd=work, env=env)
    located = run(python, "-c", "import bot, bot.runtime, bot.store.migrate as m; print(bot.__file__); print(m.MIGRATIONS); print(m.head())",
                  cwd=work, env=env).split()
    assert located[0].startswith(str(purelib)) and located[1] == str(purelib / "bot" / "migrations")
    assert located[2] == sorted(p.name[:4] for p in (ROOT / "migrations" / "versions").glob("0*.py"))[-1]


def test_every_package_is_shipped() -> None:
    declared = set(tomllib_load()["tool"]["setuptools"]["packages"])
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "bot").rglob("__init__.py")}
    assert on_disk | {"bot.migrations", "bot.migrations.versions"} == declared


def tomllib_load() -> dict[str, object]:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())  # type: ignore[no-any-return]


def test_the_dockerfile_and_the_manifests_agree() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert dockerfile.startswith("# syntax=") and "FROM python:3.11-slim" in dockerfile
    assert "USER changeops" in dockerfile and 'CMD ["bot", "serve"]' in dockerfile and "HEALTHCHECK" in dockerfile and "/healthz" in dockerfile
    deployment = yaml.safe_load((ROOT / "manifests" / "k8s" / "deployment.yaml").read_text())
    pod = deployment["spec"]["template"]["spec"]
    assert pod["initContainers"][0]["command"] == ["bot", "migrate"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["terminationGracePeriodSeconds"] > 20  # above the bot's own SHUTDOWN_GRACE_SECONDS (20 by default)
    images = {c["image"] for c in pod["containers"] + pod["initContainers"]}
    assert images == {"changeops:latest"}
