#!/usr/bin/env python3
"""made_up_release.py CSV OUT [KERNEL...] — writes a made-up Liger release
for the regressions view's test: the 0.2.1 rows of the named kernels
(default geglu and rms_norm), re-versioned 9.9.0 and re-timed, with Liger's
larger sizes (the upper half of each sweep) 1.25x slower and its smaller
ones 0.9x; other providers unchanged."""
import collections
import csv
import sys

BASE, FAKE = '0.2.1', '9.9.0'
SLOWER, FASTER = 1.25, 0.9


def main():
    src, out = sys.argv[1], sys.argv[2]
    kernels = set(sys.argv[3:] or ['geglu', 'rms_norm'])
    with open(src, newline='') as f:
        rows = [r for r in csv.DictReader(f)
                if r['liger_version'] == BASE and r['kernel_name'] in kernels]
    fields = list(rows[0].keys())

    def sweep(r):
        return (r['kernel_name'], r['kernel_provider'],
                r['kernel_operation_mode'], r['metric_name'], r['gpu_name'],
                r['extra_benchmark_config_str'])
    xs = collections.defaultdict(list)
    for r in rows:
        xs[sweep(r)].append(float(r['x_value']))
    with open(out, 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            r = dict(r)
            s = sorted(xs[sweep(r)])
            k = 1.0
            if r['kernel_provider'] == 'liger':
                k = SLOWER if float(r['x_value']) >= s[len(s) // 2] else FASTER
            for c in ('y_value_50', 'y_value_20', 'y_value_80'):
                r[c] = repr(float(r[c]) * k)
            r['liger_version'] = FAKE
            r['timestamp'] = '1999-12-31 00:00:00'
            w.writerow(r)


if __name__ == '__main__':
    main()
