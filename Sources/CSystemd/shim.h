// sd-bus (libsystemd), for the MPRIS player backend: D-Bus from Swift.
#ifndef BATON_CSYSTEMD_SHIM_H
#define BATON_CSYSTEMD_SHIM_H
#include <systemd/sd-bus.h>
#endif
