#!/usr/bin/env python3
"""Writes gpuwarden(1) from the binary's own --help texts, so the man page documents exactly the
build it ships with (docs/packaging.md).

    manpage.py GPUWARDEN_BINARY OUTPUT

Every subcommand (and sub-subcommand) listed under "Subcommands:" gets a section with its usage
and options. The date is the commit date baked into the binary (`gpuwarden version`), never the
time of the build, so two builds of one commit write the same page."""
import re
import subprocess
import sys


def run(binary, args):
    out = subprocess.run([binary, *args, "--help"], capture_output=True, text=True, timeout=30)
    # CLI11 prints the program as it was called; the page names it as users type it.
    return (out.stdout or out.stderr).replace(binary, "gpuwarden")


def parse(text):
    """CLI11 help: a description, a Usage line, then sections ("Options:", "Subcommands:", ...)
    whose entries start at column 2 and continue on deeper-indented lines."""
    desc, usage, sections, current = [], "", {}, None
    for line in text.splitlines():
        if line.startswith("Usage:"):
            usage = line[len("Usage:"):].strip()
        elif re.match(r"^[A-Z][A-Za-z ]*:$", line):
            current = line[:-1]
            sections[current] = []
        elif current is None:
            if line.strip():
                desc.append(line.strip())
        elif re.match(r"^  \S", line):
            name, _, help_text = line.strip().partition("  ")
            sections[current].append([name.strip(), help_text.strip()])
        elif line.strip() and sections[current]:
            entry = sections[current][-1]
            entry[1] = (entry[1] + " " + line.strip()).strip()
    return " ".join(desc), usage, sections


def roff(text):
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return re.sub(r"^([.'])", r"\\&\1", text)


def command_section(binary, path, out):
    desc, usage, sections = parse(run(binary, path))
    out.append(f'.SS "{" ".join(path)}"')
    if desc:
        out.append(roff(desc))
    if usage:
        out.append(".PP")
        out.append(f"\\fBUsage:\\fR {roff(usage)}")
    for title, entries in sections.items():
        if title == "Subcommands":
            continue
        for name, help_text in entries:
            out.append(".TP")
            out.append(f"\\fB{roff(name)}\\fR")
            out.append(roff(help_text) if help_text else "")
    for name, _ in sections.get("Subcommands", []):
        command_section(binary, path + [name], out)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: manpage.py GPUWARDEN_BINARY OUTPUT")
    binary, output = sys.argv[1], sys.argv[2]
    version = subprocess.run([binary, "--version"], capture_output=True, text=True,
                             timeout=30).stdout.strip()
    m = re.search(r"build date:\s*(\d{4})(\d{2})(\d{2})", version)
    date = "-".join(m.groups()) if m else "unknown"
    m = re.search(r"version (\S+)", version)
    title = f"gpuwarden {m.group(1)}" if m else "gpuwarden"
    desc, usage, sections = parse(run(binary, []))
    out = [
        f'.TH GPUWARDEN 1 "{date}" "{roff(title)}" "User Commands"',
        ".SH NAME",
        "gpuwarden \\- GPU fleet observability and governance agent",
        ".SH SYNOPSIS",
        f"\\fBgpuwarden\\fR {roff(usage.replace('gpuwarden', '', 1).strip())}",
        ".SH DESCRIPTION",
        roff(desc) if desc else "",
        ".PP",
        "gpuwarden watches every GPU through NVML, ties each GPU to the job, user and team using it, "
        "keeps the history, evaluates the alert rule pack and serves a Prometheus-compatible API, "
        "a web console and \\fB/metrics\\fR.",
        ".SH OPTIONS",
    ]
    for title, entries in sections.items():
        if title == "Subcommands":
            continue
        for name, help_text in entries:
            out += [".TP", f"\\fB{roff(name)}\\fR", roff(help_text)]
    out.append(".SH COMMANDS")
    for name, _ in sections.get("Subcommands", []):
        command_section(binary, [name], out)
    out += [
        ".SH FILES",
        ".TP", "\\fI/etc/gpuwarden/gpuwarden.yaml\\fR", "The configuration (every default, commented out).",
        ".TP", "\\fI/var/lib/gpuwarden\\fR", "The history, job records and governance state.",
        ".TP", "\\fI/usr/share/gpuwarden/rules\\fR", "The alert and recording rule pack.",
        ".TP", "\\fI/usr/share/gpuwarden/deploy\\fR",
        "The deploy kit: Prometheus, Alertmanager, Grafana, Kubernetes, Slurm and systemd files.",
        ".TP", "\\fI/usr/share/doc/gpuwarden\\fR", "The documentation.",
        ".SH SEE ALSO",
        "\\fBprometheus\\fR(1), \\fBnvidia\\-smi\\fR(1)",
    ]
    with open(output, "w", encoding="utf-8") as f:
        f.write("\n".join(line for line in out if line is not None) + "\n")


if __name__ == "__main__":
    main()
