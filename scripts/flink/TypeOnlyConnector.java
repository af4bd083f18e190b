/*
 * The release gate's stand-in for a connector its checker does not have (JDBC, Doris, ClickHouse, a CDC source...):
 * a table source and sink that check types and nothing else, so Flink's planner validates the query and the sink's
 * columns as it would with the real connector, without the real connector's options (which it cannot know).
 *
 * The gate sets 'connector' = 'changeops-type-only' on such a table and keeps the real one in
 * 'changeops.unchecked-connector'. Scans are append-only, unless the real connector is a CDC one (its name ends
 * in -cdc): then a changelog. Lookups (dimension joins) are supported; a sink takes what the query gives (upserts
 * when the table has a primary key); metadata columns are read and written as the table declares them. Nothing here
 * ever runs: the checker compiles plans, never executes them.
 */
package changeops.flink;

import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.sink.DynamicTableSink;
import org.apache.flink.table.connector.sink.SinkV2Provider;
import org.apache.flink.table.connector.sink.abilities.SupportsWritingMetadata;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.LookupTableSource;
import org.apache.flink.table.connector.source.ScanTableSource;
import org.apache.flink.table.connector.source.abilities.SupportsReadingMetadata;
import org.apache.flink.table.connector.source.lookup.LookupFunctionProvider;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.factories.DynamicTableSinkFactory;
import org.apache.flink.table.factories.DynamicTableSourceFactory;
import org.apache.flink.table.functions.LookupFunction;
import org.apache.flink.table.types.DataType;
import org.apache.flink.types.RowKind;

public class TypeOnlyConnector implements DynamicTableSourceFactory, DynamicTableSinkFactory {
    public static final String IDENTIFIER = "changeops-type-only";
    public static final String REAL = "changeops.unchecked-connector";

    @Override
    public String factoryIdentifier() {
        return IDENTIFIER;
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        return Collections.emptySet();
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        return Collections.emptySet();  // and no validation: the real connector's options stay unchecked
    }

    @Override
    public DynamicTableSource createDynamicTableSource(Context context) {
        String real = context.getCatalogTable().getOptions().getOrDefault(REAL, "");
        return new Source(metadata(context.getCatalogTable().getResolvedSchema()), real.endsWith("-cdc"));
    }

    @Override
    public DynamicTableSink createDynamicTableSink(Context context) {
        ResolvedSchema schema = context.getCatalogTable().getResolvedSchema();
        return new Sink(metadata(schema), schema.getPrimaryKey().isPresent());
    }

    /** The metadata keys the table declares, with their types: what the real connector must offer. */
    static Map<String, DataType> metadata(ResolvedSchema schema) {
        Map<String, DataType> keys = new LinkedHashMap<>();
        for (Column column : schema.getColumns()) {
            if (column instanceof Column.MetadataColumn) {
                Column.MetadataColumn meta = (Column.MetadataColumn) column;
                keys.put(meta.getMetadataKey().orElse(meta.getName()), meta.getDataType());
            }
        }
        return keys;
    }

    static final class Source implements ScanTableSource, LookupTableSource, SupportsReadingMetadata {
        private final Map<String, DataType> metadata;
        private final boolean changelog;

        Source(Map<String, DataType> metadata, boolean changelog) {
            this.metadata = metadata;
            this.changelog = changelog;
        }

        @Override
        public ChangelogMode getChangelogMode() {
            return changelog ? ChangelogMode.all() : ChangelogMode.insertOnly();
        }

        @Override
        public ScanRuntimeProvider getScanRuntimeProvider(ScanContext context) {
            throw new UnsupportedOperationException("a type-only table is checked, never read");
        }

        @Override
        public LookupRuntimeProvider getLookupRuntimeProvider(LookupContext context) {
            return LookupFunctionProvider.of(new LookupFunction() {
                @Override
                public Collection<RowData> lookup(RowData keyRow) {
                    return Collections.emptyList();
                }
            });
        }

        @Override
        public Map<String, DataType> listReadableMetadata() {
            return metadata;
        }

        @Override
        public void applyReadableMetadata(List<String> keys, DataType producedDataType) {
        }

        @Override
        public DynamicTableSource copy() {
            return new Source(metadata, changelog);
        }

        @Override
        public String asSummaryString() {
            return IDENTIFIER;
        }
    }

    static final class Sink implements DynamicTableSink, SupportsWritingMetadata {
        private final Map<String, DataType> metadata;
        private final boolean keyed;

        Sink(Map<String, DataType> metadata, boolean keyed) {
            this.metadata = metadata;
            this.keyed = keyed;
        }

        @Override
        public ChangelogMode getChangelogMode(ChangelogMode requested) {
            if (keyed && requested.contains(RowKind.UPDATE_BEFORE)) {
                return ChangelogMode.upsert();  // a keyed sink upserts, as JDBC, Doris or ClickHouse tables do
            }
            return requested;
        }

        @Override
        public SinkRuntimeProvider getSinkRuntimeProvider(Context context) {
            return SinkV2Provider.of(new DiscardingSink<>());
        }

        @Override
        public Map<String, DataType> listWritableMetadata() {
            return metadata;
        }

        @Override
        public void applyWritableMetadata(List<String> keys, DataType consumedDataType) {
        }

        @Override
        public DynamicTableSink copy() {
            return new Sink(metadata, keyed);
        }

        @Override
        public String asSummaryString() {
            return IDENTIFIER;
        }
    }
}
