/* doctor: the checks behind `anvil doctor`. doctor_gather() collects facts about this
 * machine (Vulkan loader, driver manifests (ICDs) and the variables that redirect them,
 * the device list and its decisions, /dev/dri and /dev/kfd access, ROCm), and
 * doctor_check() turns facts into findings, each with a plain-words explanation and the
 * fix. doctor_check is pure, so tests feed it synthetic facts. */
#ifndef ANVIL_DOCTOR_H
#define ANVIL_DOCTOR_H
#include <stdbool.h>
#include <stdio.h>

#include "device.h"

typedef enum { DOC_OK = 0, DOC_INFO, DOC_WARN, DOC_PROBLEM } doctor_level;

typedef struct {
    doctor_level level;
    char title[256];
    char explain[768];
    char fix[1024];
} doctor_finding;

#define DOCTOR_MAX_ICDS 24
#define DOCTOR_MAX_FINDINGS 48

typedef struct {
    char manifest[512];
    bool manifest_exists;
    char library[512];       /* library_path from the manifest ("" if unreadable) */
    bool library_checked;    /* a path (not a bare name the dynamic linker resolves) */
    bool library_exists;
} doctor_icd;

typedef struct {
    dev_os os;
    bool vulkan_built;
    /* Vulkan loader library. */
    bool loader_found;
    char loader_name[64];
    char loader_error[256];
    /* Driver manifests: from the overriding variable when set, else the standard folders. */
    const char *icd_env_var;          /* "VK_DRIVER_FILES" / "VK_ICD_FILENAMES" / NULL */
    char icd_env_value[512];
    int n_icds;
    doctor_icd icds[DOCTOR_MAX_ICDS];
    int n_system_icds;                /* manifests in the standard folders (for the fix text) */
    char system_icd_example[512];
    /* The device list (probed) and the outcome of device_list_select. */
    const device_list *devices;
    int select_rc;
    char select_error[512];
    /* Linux device nodes. */
    bool dri_exists;
    int n_render_nodes, n_render_ok;
    char render_node[64];             /* first inaccessible (or first) render node */
    char render_group[64];            /* its group name */
    bool kfd_exists, kfd_ok;
    char kfd_group[64];
    int n_pci_gpus, n_amd_pci_gpus;   /* display-class PCI devices the kernel knows (sysfs) */
    /* ROCm. */
    bool rocm_found;
    char rocm_where[256];
    char hsa_override[64];
} doctor_facts;

/* Collects the facts of this machine. l must be probed; select_rc / select_error are what
 * device_list_select returned for the process environment. */
void doctor_gather(doctor_facts *f, const device_list *l, int select_rc, const char *select_error);
/* Reads the ICD manifest variables and folders into f (part of doctor_gather; tests call it). */
void doctor_scan_icds(doctor_facts *f);
/* Findings for the facts, most important first. Returns their count. */
int doctor_check(const doctor_facts *f, doctor_finding *out, int max);
/* Prints the findings and a summary line; returns the number of DOC_PROBLEM findings. */
int doctor_print(FILE *out, const doctor_finding *fnd, int n);
const char *doctor_level_name(doctor_level l); /* "ok", "info", "warn", "PROBLEM" */
#endif
