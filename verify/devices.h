/* verify/devices.h — the host's GPUs as kernelindex-ref reports them to the
 * verification controller (NVML, loaded at run time), and the simulated
 * devices that let the controller's scheduling be tested without a GPU. */
#ifndef VERIFY_DEVICES_H
#define VERIFY_DEVICES_H

/* The environment that turns simulation on: N devices (1..64). */
#define REF_SIM_DEVICES_ENV "KI_REF_SIMULATED_DEVICES"

/* Prints {"devices": [{"index", "uuid", "name", "memoryMiB",
 * "maxClocksMHz": {"sm", "memory"}, "ecc", "eccErrors", "health",
 * "simulated"}]} on stdout: the simulated devices when
 * KI_REF_SIMULATED_DEVICES is set, else what NVML finds (none when NVML
 * cannot be loaded). Returns the exit status. */
int ref_list_devices(void);

/* Whether the simulated devices are on (then the CPU backend measures). */
int ref_sim_active(void);

/* Around a measurement on a simulated device (CUDA_VISIBLE_DEVICES names
 * it): appends "start UUID VERIFICATION TIME PID" to KI_REF_SIMULATED_LOG,
 * sleeps KI_REF_SIMULATED_DELAY_MS, and crashes (SIGABRT) when the device
 * is KI_REF_SIMULATED_FAULT. ref_sim_end appends the "end" line. Both do
 * nothing when simulation is off. */
void ref_sim_begin(void);
void ref_sim_end(void);

#endif
