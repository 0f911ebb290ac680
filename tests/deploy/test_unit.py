#!/usr/bin/env python3
"""test_unit — deploy/kernelindexd.service: `systemd-analyze verify`
accepts it (its commands exist, its man page is found), it is hardened
(own user, StateDirectory, ProtectSystem=strict, NoNewPrivileges,
Type=notify; `systemd-analyze security` rates its exposure), and its
ExecStartPre check passes on the example configuration."""
import os
import re
import shlex
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'e2e'))
import kitest  # noqa: E402
from kitest import check, eq, test  # noqa: E402

SRC = os.path.abspath(os.environ.get('KI_SRCDIR') or kitest.REPO)
UNIT = os.path.join(SRC, 'deploy', 'kernelindexd.service')
# The exposure `systemd-analyze security` gave the unit (systemd 252):
# 1.3 of 10; "OK" ends at 4.9.
MAX_EXPOSURE = 2.0


def directives():
    """[(key, value)] of the [Service] section, in order."""
    out, section = [], None
    with open(UNIT) as f:
        for line in f:
            line = line.strip()
            if line.startswith('['):
                section = line
            elif section == '[Service]' and '=' in line and \
                    not line.startswith('#'):
                k, v = line.split('=', 1)
                out.append((k, v))
    return out


def installed_unit():
    """The unit with this build's daemon in place of /usr/local/bin's and
    the example configuration in place of /etc/kernelindex's (as `make
    install` substitutes its paths), and kernelindexd(8) on a MANPATH:
    (unit path, environment)."""
    d = kitest.tempdir('kitest-unit-')
    bindir = os.path.dirname(kitest.daemon_path())
    with open(UNIT) as f:
        text = f.read()
    text = text.replace('/usr/local/bin/', bindir + '/')
    text = text.replace('/etc/kernelindex/', os.path.join(SRC, 'deploy') +
                        '/')
    path = os.path.join(d, 'kernelindexd.service')
    with open(path, 'w') as f:
        f.write(text)
    man8 = os.path.join(d, 'man', 'man8')
    os.makedirs(man8)
    shutil.copy(os.path.join(SRC, 'man', 'kernelindexd.8'), man8)
    env = dict(os.environ, MANPATH=os.path.join(d, 'man') + ':',
               SYSTEMD_LOG_COLOR='0', MAN_DISABLE_SECCOMP='1')
    return path, env


def analyze():
    tool = shutil.which('systemd-analyze')
    check(tool is not None, 'systemd-analyze is missing: scripts/deps.sh '
          '--test installs the Debian package systemd')
    return tool


@test
def verify_accepts_the_unit():
    path, env = installed_unit()
    r = subprocess.run([analyze(), 'verify', path], capture_output=True,
                       text=True, env=env)
    eq((r.returncode, r.stdout + r.stderr), (0, ''),
       'systemd-analyze verify')


@test
def verify_rejects_a_missing_command():
    # The check above means something: a unit whose daemon is missing
    # fails it.
    path, env = installed_unit()
    with open(path) as f:
        text = f.read()
    with open(path, 'w') as f:
        f.write(text.replace('ExecStart=' + os.path.dirname(
            kitest.daemon_path()), 'ExecStart=/nonexistent'))
    r = subprocess.run([analyze(), 'verify', path], capture_output=True,
                       text=True, env=env)
    check(r.returncode != 0 and '/nonexistent' in r.stderr,
          'verify of a unit without its daemon: %d %r' % (r.returncode,
                                                          r.stderr))


@test
def hardened():
    d = dict(directives())
    eq(d.get('Type'), 'notify', 'Type')
    eq(d.get('NotifyAccess'), 'main', 'NotifyAccess')
    check(d.get('User') not in (None, '', 'root', '0'), 'own user: %r' %
          d.get('User'))
    eq(d.get('StateDirectory'), 'kernelindex', 'StateDirectory')
    eq(d.get('ProtectSystem'), 'strict', 'ProtectSystem')
    eq(d.get('NoNewPrivileges'), 'yes', 'NoNewPrivileges')
    eq(d.get('CapabilityBoundingSet'), '', 'no capabilities')
    # The store is the state directory.
    check('--data-dir ${STATE_DIRECTORY}' in d['ExecStart'], d['ExecStart'])
    # The unit's user is the one sysusers.d creates.
    with open(os.path.join(SRC, 'deploy', 'kernelindex.sysusers')) as f:
        users = [ln.split() for ln in f if ln.startswith('u ')]
    eq([u[1] for u in users], [d['User']], 'sysusers.d user')
    path, env = installed_unit()
    r = subprocess.run([analyze(), 'security', '--offline=true', path],
                       capture_output=True, text=True, env=env)
    m = re.search(r'Overall exposure level for \S+: ([0-9.]+)', r.stdout)
    check(m is not None, 'systemd-analyze security: %r' %
          (r.stdout[-500:] + r.stderr))
    check(float(m.group(1)) <= MAX_EXPOSURE, 'exposure %s > %s' %
          (m.group(1), MAX_EXPOSURE))
    print('      systemd-analyze security: exposure %s' % m.group(1))


@test
def exec_start_pre_checks_the_configuration():
    path, env = installed_unit()
    with open(path) as f:
        pre = [ln.split('=', 1)[1] for ln in f
               if ln.startswith('ExecStartPre=')]
    eq(len(pre), 1, 'one ExecStartPre')
    argv = shlex.split(pre[0])
    eq(argv[-1], '--check', 'ExecStartPre is the --check')
    r = subprocess.run(argv, capture_output=True, text=True)
    eq((r.returncode, r.stdout.strip()), (0, 'configuration ok'),
       'ExecStartPre: ' + r.stderr)


if __name__ == '__main__':
    sys.exit(kitest.run_all())
