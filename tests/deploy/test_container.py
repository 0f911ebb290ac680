#!/usr/bin/env python3
"""test_container — deploy/Containerfile and deploy/container-build.sh
agree (the build stage runs the script; both name the same Debian packages
for each stage, the same prefix and the same non-root user id, which the
Kubernetes manifests run as), and the script's build steps work: `ci`
configures, makes and installs into a temporary directory, checks the
installed tree and runs the installed daemon as a user other than root.
No container engine is needed."""
import os
import re
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'e2e'))
import kitest  # noqa: E402
from kitest import check, eq, test  # noqa: E402

SRC = os.path.abspath(os.environ.get('KI_SRCDIR') or kitest.REPO)
SCRIPT = os.path.join(SRC, 'deploy', 'container-build.sh')
CONTAINERFILE = os.path.join(SRC, 'deploy', 'Containerfile')


def script(*args):
    r = subprocess.run(['/bin/sh', SCRIPT] + list(args), capture_output=True,
                       text=True, timeout=1200)
    return r.returncode, r.stdout, r.stderr


def stages():
    """[(base image, [(instruction, argument)])] of the Containerfile, with
    continued lines joined and comments dropped."""
    with open(CONTAINERFILE) as f:
        text = re.sub(r'\\\n', ' ', f.read())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        op, _, arg = line.partition(' ')
        if op == 'FROM':
            out.append((arg, []))
        else:
            check(out, 'an instruction before FROM: ' + line)
            out[-1][1].append((op, ' '.join(arg.split())))
    return out


def apt_packages(steps):
    """The packages of the stage's apt-get install."""
    pkgs = []
    for op, arg in steps:
        if op == 'RUN' and 'apt-get install' in arg:
            words = shlex.split(arg)
            i = words.index('install') + 1
            while words[i].startswith('-'):
                i += 1
            while words[i] not in ('&&', ';'):
                pkgs.append(words[i])
                i += 1
    return pkgs


def script_var(name):
    with open(SCRIPT) as f:
        m = re.search(r'^%s=(\S+)$' % name, f.read(), re.M)
    check(m is not None, 'container-build.sh sets ' + name)
    return m.group(1)


@test
def containerfile_runs_the_scripts_steps():
    st = stages()
    eq(len(st), 2, 'two stages')
    eq(st[0][0], 'debian:12 AS build', 'the build stage')
    eq(st[1][0], 'debian:12', 'the runtime stage')
    rc, build_pkgs, _ = script('packages', 'build')
    eq(rc, 0, 'packages build')
    eq(apt_packages(st[0][1]), build_pkgs.split(),
       'the build stage installs the script\'s build packages')
    rc, runtime_pkgs, _ = script('packages', 'runtime')
    eq(apt_packages(st[1][1]), runtime_pkgs.split(),
       'the runtime stage installs the script\'s runtime packages')
    runs = [a for op, a in st[0][1] if op == 'RUN']
    eq(runs[-1], '/src/deploy/container-build.sh build /src /out && '
       '/src/deploy/container-build.sh check /out',
       'the build stage\'s steps are the script\'s')
    check(('COPY', '--from=build /out/ /') in st[1][1],
          'the runtime stage takes the installed tree')


@test
def image_runs_as_the_scripts_non_root_user():
    rc, uid, _ = script('uid')
    uid = int(uid)
    check(uid > 0, 'a non-root uid')
    steps = dict((op, a) for op, a in stages()[1][1] if op != 'RUN')
    eq(steps['USER'], '%d:%d' % (uid, uid), 'USER (numeric: runAsNonRoot '
       'checks it)')
    run = ' '.join(a for op, a in stages()[1][1] if op == 'RUN')
    check('useradd --system --uid %d --gid %d' % (uid, uid) in run and
          'groupadd --system --gid %d' % uid in run, 'the user is created')
    check('install -d -o %d -g %d' % (uid, uid) in run,
          'the data directory is the user\'s')
    import yaml
    for name in ('lmdb.yaml', 'etcd.yaml'):
        with open(os.path.join(SRC, 'deploy', 'kubernetes', name)) as f:
            for doc in yaml.safe_load_all(f):
                if doc and doc['kind'] in ('StatefulSet', 'Deployment'):
                    sc = doc['spec']['template']['spec']['securityContext']
                    eq((sc['runAsUser'], sc['runAsGroup'], sc['fsGroup']),
                       (uid, uid, uid), name + ': the image\'s user')
    # The entry point is the installed daemon, with options it has.
    prefix = script_var('PREFIX')
    sysconf = script_var('SYSCONFDIR')
    import json
    eq(json.loads(steps['ENTRYPOINT']), [prefix + '/bin/kernelindexd'],
       'ENTRYPOINT')
    cmd = json.loads(steps['CMD'])
    eq(cmd[:2], ['--config', sysconf + '/kernelindex/kernelindexd.conf'],
       'CMD reads the installed configuration')
    help_ = subprocess.run([kitest.daemon_path(), '--help'],
                           capture_output=True, text=True).stdout
    for a in cmd[2::2]:
        check(re.search(r'^  %s ' % re.escape(a), help_, re.M),
              'CMD option %s is kernelindexd\'s' % a)


@test
def build_steps_work_on_this_host():
    rc, out, err = script('ci', SRC)
    eq(rc, 0, 'container-build.sh ci:\n' + (out + err)[-3000:])
    check('installed tree complete' in out, out)
    m = re.search(r'installed daemon served as uid (\d+)', out)
    check(m is not None and m.group(1) != '0', 'served as non-root: ' + out)


if __name__ == '__main__':
    sys.exit(kitest.run_all())
