#!/usr/bin/env python3
"""test_config — the example configuration (deploy/kernelindexd.conf) and
the manual pages match kernelindexd's option table: every option of
`kernelindexd --help` is in the example (set, or commented with its
default) and in kernelindexd(8), and they name no other; the example passes
--check; the pages format without warnings; the store options take only
what this build has."""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'e2e'))
import kitest  # noqa: E402
from kitest import check, eq, test  # noqa: E402

SRC = os.path.abspath(os.environ.get('KI_SRCDIR') or kitest.REPO)
CONF = os.path.join(SRC, 'deploy', 'kernelindexd.conf')
MAN = os.path.join(SRC, 'man')
# Defaults that follow the build's prefix: the example shows them for
# /usr/local, and `make install` writes the prefix's own.
PREFIX_DEFAULTS = {'static-dir': '/share/kernelindex/static',
                   'ref-program': '/bin/kernelindex-ref'}


def daemon(*args):
    r = subprocess.run([kitest.daemon_path()] + list(args),
                       capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def table():
    """{option: default} from `kernelindexd --help`."""
    rc, out, _ = daemon('--help')
    eq(rc, 0, '--help')
    opts = dict(re.findall(r'^  --([a-z][a-z-]*) .*\(default (.*)\)$', out,
                           re.M))
    check(len(opts) > 20, 'the option table was read: %r' % opts)
    return opts


def example():
    """{option: (value, commented)} of the example; each named once."""
    seen = {}
    with open(CONF) as f:
        for n, line in enumerate(f, 1):
            m = re.match(r'^(#\s*)?([a-z][a-z_-]*)\s*=\s*(.*?)\s*$', line)
            if not m:
                check(line.startswith('#') or not line.strip(),
                      'line %d is neither an option nor a comment: %r' %
                      (n, line))
                continue
            name = m.group(2).replace('_', '-')
            check(name not in seen, 'line %d: %s named twice' % (n, name))
            seen[name] = (m.group(3), m.group(1) is not None)
    return seen


@test
def example_names_every_option_and_no_other():
    opts, ex = table(), example()
    eq(sorted(set(opts) - set(ex)), [], 'options missing from the example')
    eq(sorted(set(ex) - set(opts)), [], 'example options kernelindexd lacks')


@test
def example_comments_show_the_defaults():
    opts = table()
    for name, (value, commented) in example().items():
        if not commented:
            continue
        if name in PREFIX_DEFAULTS:
            check(opts[name].endswith(PREFIX_DEFAULTS[name]) and
                  value.endswith(PREFIX_DEFAULTS[name]),
                  '%s: %r against the default %r' % (name, value,
                                                     opts[name]))
        else:
            eq(value, opts[name], 'the commented default of ' + name)


@test
def example_passes_check():
    rc, out, err = daemon('--config', CONF, '--check')
    eq((rc, out.strip()), (0, 'configuration ok'), '--check (%s)' % err)


def has_etcd():
    """Whether this build has the etcd store backend."""
    rc, _, _ = daemon('--store', 'etcd', '--etcd-endpoints',
                      'http://127.0.0.1:2379', '--check')
    return rc == 0


@test
def store_takes_only_this_builds_backends():
    rc, out, err = daemon('--store', 'lmdb', '--check')
    eq(rc, 0, '--store lmdb: ' + err)
    rc, out, err = daemon('--store', 'sqlite', '--check')
    eq(rc, 2, '--store sqlite')
    check('sqlite' in err and 'store' in err, err)
    # etcd-endpoints would be ignored by the lmdb store: refused.
    rc, out, err = daemon('--etcd-endpoints', 'http://127.0.0.1:2379',
                          '--check')
    eq(rc, 2, '--etcd-endpoints with the lmdb store')
    check('etcd-endpoints' in err, err)
    if has_etcd():
        return
    rc, out, err = daemon('--store', 'etcd', '--etcd-endpoints',
                          'http://127.0.0.1:2379', '--check')
    eq(rc, 2, '--store etcd')
    check('store: "etcd" is not available: this build\'s store backends: '
          'lmdb' in err, err)
    # The daemon refuses to start, too, before opening anything.
    data = kitest.tempdir('kitest-data-')
    rc, out, err = daemon('--store', 'etcd', '--data-dir', data,
                          '--listen', '127.0.0.1:0')
    eq(rc, 2, 'start with --store etcd')
    check("this build's store backends: lmdb" in err, err)
    eq(os.listdir(data), [], 'nothing was created')


@test
def manual_names_every_option_and_no_other():
    with open(os.path.join(MAN, 'kernelindexd.8')) as f:
        page = f.read()
    named = set(re.findall(r'\\-\\-([a-z][a-z\\-]*)', page))
    named = {n.replace('\\-', '-') for n in named}
    opts = set(table())
    eq(sorted(opts - named), [], 'options kernelindexd(8) does not describe')
    extra = named - opts - {'config', 'check', 'help', 'version', 'role',
                            'source', 'prefix', 'description', 'repair',
                            'from', 'to', 'batch'}
    eq(sorted(extra), [], 'options in kernelindexd(8) the daemon lacks')


@test
def manual_names_every_command():
    rc, out, _ = daemon('--help')
    cmds = re.findall(r'^(?:usage:)?\s+kernelindexd \[OPTIONS\] ([a-z]+)',
                      out, re.M)
    check(len(cmds) >= 2, 'the commands of --help: %r' % cmds)
    with open(os.path.join(MAN, 'kernelindexd.8')) as f:
        page = f.read()
    synopsis = page[page.index('.SH SYNOPSIS'):page.index('.SH DESCRIPTION')]
    commands = page[page.index('.SH COMMANDS'):page.index('.SH SIGNALS')]
    for c in cmds:
        check(re.search(r'^\.B %s\b' % c, synopsis, re.M),
              'kernelindexd(8) SYNOPSIS lacks ' + c)
        check(re.search(r'^\.B[IR]? "?%s\b' % c, commands, re.M),
              'kernelindexd(8) COMMANDS lacks ' + c)


@test
def manual_pages_format_without_warnings():
    groff = shutil.which('groff')
    check(groff is not None, 'groff is missing (Debian groff-base)')
    for page in ('kernelindexd.8', 'kernelindex.1'):
        r = subprocess.run([groff, '-man', '-ww', '-z',
                            os.path.join(MAN, page)],
                           capture_output=True, text=True)
        eq((r.returncode, r.stderr), (0, ''), 'groff -man -ww -z ' + page)
        if shutil.which('man'):
            r = subprocess.run(['man', '--warnings', '-l',
                                os.path.join(MAN, page)],
                               capture_output=True, text=True,
                               env=dict(os.environ, MANWIDTH='80',
                                        MAN_DISABLE_SECCOMP='1'))
            eq((r.returncode, r.stderr), (0, ''), 'man --warnings ' + page)
            check('SYNOPSIS' in r.stdout and 'OPTIONS' in r.stdout or
                  'COMMANDS' in r.stdout, 'the page rendered: %r' %
                  r.stdout[:300])


if __name__ == '__main__':
    sys.exit(kitest.run_all())
