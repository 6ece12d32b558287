# SPDX-License-Identifier: MIT
# packaging/install.mk - 'make install' / 'make uninstall' (included by the top Makefile).
#
#   make install   [PREFIX=/usr/local] [DESTDIR=] [libdir=$(PREFIX)/lib] [bindir=...]
#                  the library and its symlinks, the headers, gdrapi.pc, the tools, their man pages,
#                  vramio-run and its libraries ($(libdir)/vramio/: the libcuda.so.1 shim
#                  libvramio_cuda.so and the bridge libvramio_bridge.so)
#   make lib_install / exes_install   GDRCopy's targets, the same variables: the library part
#                  (library, links, headers, gdrapi.pc) / the gdrcopy_* tools and their man pages
#   make uninstall the same variables: removes exactly what 'make install' put there
#   make install-dkms / uninstall-dkms   (root, for source installs of the kernel module)
#                  the module source in /usr/src/gdrdrv-$(VERSION) with its dkms.conf, the udev
#                  rule and the modprobe.d file; then: dkms install gdrdrv/$(VERSION).
#                  uninstall-dkms (no DESTDIR) also runs dkms remove gdrdrv/$(VERSION) --all
#
# Every path follows the GNU names so that distribution builds can pass their own
# (debian/rules passes libdir=/usr/lib/<multiarch>, udevrulesdir=/lib/udev/rules.d).
# The version comes from the top Makefile only: gdrapi.pc (here) and dkms.conf (driver/driver.mk)
# are generated from it.

PREFIX      ?= /usr/local
prefix      ?= $(PREFIX)
exec_prefix ?= $(prefix)
bindir      ?= $(exec_prefix)/bin
libdir      ?= $(exec_prefix)/lib
includedir  ?= $(prefix)/include
datarootdir ?= $(prefix)/share
mandir      ?= $(datarootdir)/man
man1dir     ?= $(mandir)/man1
pkgconfigdir ?= $(libdir)/pkgconfig
# Module files live where the kernel tools look, whatever PREFIX is.
dkmssrcdir  ?= /usr/src/gdrdrv-$(VERSION)
udevrulesdir ?= /etc/udev/rules.d
modprobedir ?= /etc/modprobe.d

INSTALL      ?= install
INSTALL_TOOLS := gdrcopy_sanity gdrcopy_copybw gdrcopy_copylat gdrcopy_apiperf gdrcopy_pplat \
                 gdrcopy_info
PUB_HEADERS  := gdrapi.h gdrconfig.h vramio.h
# The allocation bridge: its launcher (with a man page) and its two libraries, together in a
# private directory (plugins, not libraries to link with), where vramio-run looks for them.
INSTALL_RUNNERS := vramio-run
INSTALL_BRIDGE_LIBS := libvramio_bridge.so libvramio_cuda.so
bridgedir   ?= $(libdir)/vramio

.PHONY: install uninstall install-dkms uninstall-dkms lib_install exes exes_install

# A live install (no DESTDIR, as root) must be found by the loader at once.
LIVE_LDCONFIG = if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig; fi

# gdrapi.pc names the final paths of this PREFIX/libdir (never DESTDIR); it is written straight
# into the staging tree, so installs with different paths never share a generated file.
PC_SED = sed -e 's|@prefix@|$(prefix)|g' -e 's|@libdir@|$(libdir)|g' \
             -e 's|@includedir@|$(includedir)|g' -e 's|@VERSION@|$(VERSION)|g'

# GDRCopy's own targets, which build scripts written for it call: lib_install (the library, its
# links, the headers and gdrapi.pc), exes (the tools) and exes_install (the tools and their man
# pages), with the same variables as install; 'make install' is both, and vramio-run with its
# libraries. ('make uninstall' removes what any of them installed.)
exes: tools

lib_install: lib
	$(INSTALL) -d $(DESTDIR)$(libdir) $(DESTDIR)$(includedir) $(DESTDIR)$(pkgconfigdir)
	$(INSTALL) -m 644 $(LIB_REAL) $(DESTDIR)$(libdir)/
	ln -sfn $(notdir $(LIB_REAL)) $(DESTDIR)$(libdir)/$(LIB_SONAME)
	ln -sfn $(LIB_SONAME) $(DESTDIR)$(libdir)/libgdrapi.so
	$(INSTALL) -m 644 $(addprefix include/,$(PUB_HEADERS)) $(DESTDIR)$(includedir)/
	$(PC_SED) packaging/gdrapi.pc.in > $(DESTDIR)$(pkgconfigdir)/gdrapi.pc
	chmod 644 $(DESTDIR)$(pkgconfigdir)/gdrapi.pc
	@$(LIVE_LDCONFIG)

exes_install: tools
	$(INSTALL) -d $(DESTDIR)$(bindir) $(DESTDIR)$(man1dir)
	$(INSTALL) -m 755 $(addprefix $(BUILD)/bin/,$(INSTALL_TOOLS)) $(DESTDIR)$(bindir)/
	$(INSTALL) -m 644 $(patsubst %,packaging/man/%.1,$(INSTALL_TOOLS)) $(DESTDIR)$(man1dir)/

install: all lib_install exes_install
	$(INSTALL) -d $(DESTDIR)$(bridgedir)
	$(INSTALL) -m 755 $(addprefix $(BUILD)/bin/,$(INSTALL_RUNNERS)) $(DESTDIR)$(bindir)/
	$(INSTALL) -m 644 $(patsubst %,packaging/man/%.1,$(INSTALL_RUNNERS)) $(DESTDIR)$(man1dir)/
	$(INSTALL) -m 644 $(addprefix $(BUILD)/lib/,$(INSTALL_BRIDGE_LIBS)) $(DESTDIR)$(bridgedir)/

uninstall:
	rm -f $(DESTDIR)$(libdir)/$(notdir $(LIB_REAL)) $(DESTDIR)$(libdir)/$(LIB_SONAME) \
	    $(DESTDIR)$(libdir)/libgdrapi.so $(DESTDIR)$(pkgconfigdir)/gdrapi.pc \
	    $(addprefix $(DESTDIR)$(includedir)/,$(PUB_HEADERS)) \
	    $(addprefix $(DESTDIR)$(bindir)/,$(INSTALL_TOOLS) $(INSTALL_RUNNERS)) \
	    $(patsubst %,$(DESTDIR)$(man1dir)/%.1,$(INSTALL_TOOLS) $(INSTALL_RUNNERS)) \
	    $(addprefix $(DESTDIR)$(bridgedir)/,$(INSTALL_BRIDGE_LIBS))
	-rmdir $(DESTDIR)$(bridgedir) 2>/dev/null
	@$(LIVE_LDCONFIG)

# The module source tree as DKMS takes it, with its dkms.conf: made by driver/driver.mk
# (dkms-source), which owns the list of module files and fills in the version.
DKMS_TREE = $(BUILD)/dkms/gdrdrv-$(VERSION)

install-dkms: dkms-source
	$(INSTALL) -d $(DESTDIR)$(dkmssrcdir) $(DESTDIR)$(udevrulesdir) $(DESTDIR)$(modprobedir)
	cp -R $(DKMS_TREE)/. $(DESTDIR)$(dkmssrcdir)/
	chmod -R u=rwX,go=rX $(DESTDIR)$(dkmssrcdir)
	$(INSTALL) -m 644 packaging/udev/60-gdrdrv.rules $(DESTDIR)$(udevrulesdir)/
	$(INSTALL) -m 644 packaging/modprobe/gdrdrv.conf $(DESTDIR)$(modprobedir)/

# A live uninstall removes DKMS's builds of this version first, while their source is still
# there: without it dkms can remove nothing, and the built module stays in /lib/modules.
uninstall-dkms:
	@if [ -z "$(DESTDIR)" ] && command -v dkms >/dev/null 2>&1 && \
	    [ -n "$$(dkms status -m gdrdrv -v $(VERSION) 2>/dev/null)" ]; then \
	    echo "dkms remove gdrdrv/$(VERSION) --all"; dkms remove gdrdrv/$(VERSION) --all; fi
	rm -rf $(DESTDIR)$(dkmssrcdir)
	rm -f $(DESTDIR)$(udevrulesdir)/60-gdrdrv.rules $(DESTDIR)$(modprobedir)/gdrdrv.conf
