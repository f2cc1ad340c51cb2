/* cmd_devices: `anvil devices` (every device through every backend, whether it would be
 * used and why not; --json for scripts) and `anvil doctor` (checks with explanations and
 * fixes; exit status 1 when a problem is found). */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "device.h"
#include "doctor.h"
#include "error.h"

int cmd_devices(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_doctor_verify(int argc, char **argv); /* cmd_doctor_verify.c */

static void devices_usage(FILE *out) {
    fputs("usage: anvil devices [--json]\n\n"
          "Lists every device through every backend (CPU, Vulkan, HIP) with its type, driver,\n"
          "memory and features, and whether Anvil would use it; if not, why and how to change it.\n"
          "The selection follows ANVIL_VK_VISIBLE_DEVICES / GGML_VK_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES,\n"
          "ROCR_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES, ANVIL_BACKEND, ANVIL_DEVICE and ANVIL_IGPU.\n"
          "  --json   machine-readable output\n",
          out);
}

static cJSON *device_json(const device_list *l, const dev_info *d) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", d->id);
    cJSON_AddStringToObject(o, "backend", dev_backend_name(d->backend));
    cJSON_AddNumberToObject(o, "backend_index", d->backend_index);
    cJSON_AddStringToObject(o, "name", d->name);
    cJSON_AddStringToObject(o, "description", d->desc);
    cJSON_AddStringToObject(o, "type", dev_type_name(d->type));
    cJSON_AddNumberToObject(o, "vendor_id", d->vendor_id);
    cJSON_AddNumberToObject(o, "device_id", d->device_id);
    cJSON *drv = cJSON_AddObjectToObject(o, "driver");
    cJSON_AddStringToObject(drv, "name", d->driver_name);
    cJSON_AddStringToObject(drv, "info", d->driver_info);
    if (d->has_pci) cJSON_AddStringToObject(o, "pci_bus_id", d->pci_bus_id);
    else cJSON_AddNullToObject(o, "pci_bus_id");
    if (d->uuid_str[0]) cJSON_AddStringToObject(o, "uuid", d->uuid_str);
    else cJSON_AddNullToObject(o, "uuid");
    cJSON *mem = cJSON_AddObjectToObject(o, "memory");
    cJSON_AddNumberToObject(mem, "total", (double)d->mem_total);
    cJSON_AddNumberToObject(mem, "free", (double)d->mem_free);
    if (d->mem_detail[0]) cJSON_AddStringToObject(mem, "detail", d->mem_detail);
    cJSON_AddBoolToObject(mem, "free_known", d->mem_free_known);
    cJSON *feat = cJSON_AddObjectToObject(o, "features");
    cJSON_AddBoolToObject(feat, "fp16", d->fp16);
    cJSON_AddBoolToObject(feat, "int8_dot", d->int8_dot);
    cJSON_AddBoolToObject(feat, "coopmat", d->coopmat);
    if (d->coopmat_info[0]) cJSON_AddStringToObject(feat, d->coopmat ? "coopmat_config" : "coopmat_why", d->coopmat_info);
    cJSON_AddNumberToObject(feat, "subgroup_size", d->subgroup_size);
    cJSON_AddNumberToObject(feat, "max_allocation", (double)d->max_allocation);
    cJSON_AddNumberToObject(feat, "max_storage_range", (double)d->max_storage_range);
    if (d->gfx_target[0]) cJSON_AddStringToObject(o, "gfx_target", d->effective_gfx[0] ? d->effective_gfx : d->gfx_target);
    cJSON_AddBoolToObject(o, "supported", d->supported);
    if (!d->supported) cJSON_AddStringToObject(o, "unsupported_why", d->unsupported_why);
    cJSON_AddBoolToObject(o, "used", d->used);
    if (d->why[0]) cJSON_AddStringToObject(o, "reason", d->why);
    else cJSON_AddNullToObject(o, "reason");
    if (d->fix[0]) cJSON_AddStringToObject(o, "fix", d->fix);
    if (d->duplicate_of >= 0) cJSON_AddStringToObject(o, "same_gpu_as", l->dev[d->duplicate_of].id);
    return o;
}

static int devices_json(const device_list *l) {
    cJSON *root = cJSON_CreateObject();
    cJSON *devs = cJSON_AddArrayToObject(root, "devices");
    for (int i = 0; i < l->n; i++) cJSON_AddItemToArray(devs, device_json(l, &l->dev[i]));
    cJSON *vk = cJSON_AddObjectToObject(root, "vulkan");
    cJSON_AddBoolToObject(vk, "built", l->vulkan_built);
    cJSON_AddBoolToObject(vk, "available", l->vk_count >= 0);
    cJSON_AddNumberToObject(vk, "count", l->vk_count < 0 ? 0 : l->vk_count);
    if (l->vk_count < 0) cJSON_AddStringToObject(vk, "why", l->vk_why);
    cJSON *hip = cJSON_AddObjectToObject(root, "hip");
    cJSON_AddBoolToObject(hip, "built", l->hip_built);
    cJSON_AddBoolToObject(hip, "available", l->hip_count >= 0);
    cJSON_AddNumberToObject(hip, "count", l->hip_count < 0 ? 0 : l->hip_count);
    if (l->hip_count < 0) cJSON_AddStringToObject(hip, "why", l->hip_why);
    if (l->hip_built) cJSON_AddStringToObject(hip, "targets", l->hip_targets);
    cJSON *notes = cJSON_AddArrayToObject(root, "notes");
    for (int i = 0; i < l->n_notes; i++) cJSON_AddItemToArray(notes, cJSON_CreateString(l->notes[i]));
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    if (!s) { fprintf(stderr, "anvil: out of memory\n"); return 1; }
    puts(s);
    cJSON_free(s);
    return 0;
}

static void devices_table(const device_list *l) {
    printf("%-8s %-7s %-10s %-44s %-21s %-22s %s\n", "ID", "BACKEND", "TYPE", "NAME / DRIVER", "MEMORY FREE / TOTAL", "FEATURES", "USED");
    for (int i = 0; i < l->n; i++) {
        const dev_info *d = &l->dev[i];
        char mem[48], fr[24], tot[24], feat[64];
        dev_format_bytes(d->mem_free, fr, sizeof fr);
        dev_format_bytes(d->mem_total, tot, sizeof tot);
        if (d->mem_total) dev_fmt(mem, sizeof mem, "%s%s / %s", d->mem_free_known ? "" : "~", fr, tot);
        else dev_fmt(mem, sizeof mem, "?");
        dev_format_features(d, feat, sizeof feat);
        const char *use = d->used ? "yes" : d->skip == DEV_SKIP_CPU_FALLBACK ? "fallback" : "no";
        printf("%-8s %-7s %-10s %-44.44s %-21s %-22s %s\n", d->id, dev_backend_name(d->backend), dev_type_name(d->type), d->desc, mem, feat, use);
        if (d->why[0]) printf("         %s: %s\n", d->used ? "note" : d->skip == DEV_SKIP_CPU_FALLBACK ? "role" : "why", d->why);
        if (!d->used && d->fix[0]) printf("         fix: %s\n", d->fix);
        if (d->mem_detail[0]) printf("         memory: %s\n", d->mem_detail);
        if (d->coopmat_info[0]) printf("         coopmat: %s%s%s\n", d->coopmat ? "" : "absent (", d->coopmat_info, d->coopmat ? "" : ")");
        if (d->has_pci || d->uuid_str[0])
            printf("         %s%s%s%s\n", d->has_pci ? "pci " : "", d->has_pci ? d->pci_bus_id : "", d->has_pci && d->uuid_str[0] ? ", uuid " : d->uuid_str[0] ? "uuid " : "", d->uuid_str);
    }
    for (int i = 0; i < l->n_notes; i++) printf("note: %s\n", l->notes[i]);
}

int cmd_devices(int argc, char **argv) {
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { devices_usage(stdout); return 0; }
        else { fprintf(stderr, "anvil devices: unknown option '%s'\n", argv[i]); devices_usage(stderr); return 2; }
    }
    device_list *l = cli_devices_selected();
    if (!l) return 1;
    int rc = 0;
    if (json) rc = devices_json(l);
    else devices_table(l);
    device_list_free(l);
    return rc;
}

int cmd_doctor(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--verify")) return cmd_doctor_verify(argc, argv);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            puts("usage: anvil doctor\n       anvil doctor --verify [MODEL] [--all]\n\nChecks the Vulkan loader and drivers, the devices and the selection variables, /dev/dri\n"
                 "and ROCm, and explains each finding with the fix. Exit status 1 if a problem was found.\n"
                 "--verify: runs every kernel MODEL would use (default: standard shapes) on each Vulkan device\n"
                 "that would be used, against the CPU reference; per-case error, verdict and the checked fix\n"
                 "(ANVIL_VK_DISABLE=...); the verdict is cached per device + driver in ~/.cache/anvil.");
            return 0;
        }
        fprintf(stderr, "anvil doctor: unknown option '%s'\n", argv[i]);
        return 2;
    }
    device_list *l = device_list_probe();
    if (!l) { fprintf(stderr, "anvil: %s\n", anv_last_error()); return 1; }
    device_env env;
    device_env_from_process(&env);
    int rc = device_list_select(l, &env);
    char err[512];
    dev_fmt(err, sizeof err, "%s", rc ? anv_last_error() : "");
    static doctor_facts facts;
    doctor_gather(&facts, l, rc, err);
    static doctor_finding found[DOCTOR_MAX_FINDINGS];
    int n = doctor_check(&facts, found, DOCTOR_MAX_FINDINGS);
    int problems = doctor_print(stdout, found, n);
    device_list_free(l);
    return problems ? 1 : 0;
}
