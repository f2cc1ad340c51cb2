#!/bin/sh
# mesa-bpo: run inside a fresh trixie root by make-root.sh (mmdebstrap's customize hook): unpacks
# trixie-backports' Mesa beside the installed one (dpkg -x into /opt/mesa-bpo; the system's Mesa 25.0
# stays, since RADV_FORCE_FAMILY, the null device, is gone from Mesa 26) and writes ICD files
# /opt/mesa-bpo/{lvp,radeon}_icd.json pointing at its drivers. Usage: mesa-bpo.sh SUITE
set -e
suite=$1
mkdir -p /opt/mesa-bpo /tmp/bpo
cd /tmp/bpo
apt-get download -q=2 "mesa-vulkan-drivers/$suite-backports"
for d in ./*.deb; do dpkg -x "$d" /opt/mesa-bpo; done
# libdisplay-info2: a new dependency of Mesa 26's drivers, not in trixie's Mesa 25
DEBIAN_FRONTEND=noninteractive apt-get install -y -q=2 --no-install-recommends libdisplay-info2 >/dev/null
lib=/opt/mesa-bpo/usr/lib/x86_64-linux-gnu
for drv in lvp radeon; do
  sed "s#\"library_path\": *\"[^\"]*\"#\"library_path\": \"$lib/libvulkan_$drv.so\"#" \
    "/opt/mesa-bpo/usr/share/vulkan/icd.d/${drv}_icd.json" > "/opt/mesa-bpo/${drv}_icd.json"
  grep -q "$lib/libvulkan_$drv.so" "/opt/mesa-bpo/${drv}_icd.json"
done
cd /
rm -rf /tmp/bpo
